/*
 * libFuzzer target: rpcrdma-decode --pcap, the capture reader (pcap records, link and IP
 * and TCP headers, the TCP streams, MPA frames and FPDUs, DDP segments joined into Sends)
 * over arbitrary bytes: it must return, without a crash, leak or sanitizer report, 0 or 1
 * (never a negative error but for memory), with or without --rpc.
 */
#include <stdio.h>
#include <stdlib.h>

/* The tool is a program, not a library: build its sources into this target. */
#include "../tools/rpcrdma-decode/json.c"
#include "../tools/rpcrdma-decode/message.c"
#include "../tools/rpcrdma-decode/parse.c"
#include "../tools/rpcrdma-decode/pcap.c"
#include "../tools/rpcrdma-decode/render.c"
#include "../tools/rpcrdma-decode/rpc.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink && !(sink = fopen("/dev/null", "w")))
        abort();
    if (size == 0 || size > 1 << 20)
        return 0;
    FILE *in = fmemopen((void *)(uintptr_t)data, size, "rb");
    if (!in)
        abort();
    int r = rd_decode_pcap(in, data[size - 1] & 1 ? RD_OPT_RPC : 0, sink, sink);
    fclose(in);
    if (r != 0 && r != 1 && r != -ENOMEM)
        abort();
    return 0;
}
