/*
 * libFuzzer target: rpcrdma-decode's JSON reader, its rendering of the codec's decoded
 * headers as JSON and its reading of that JSON back for the codec's encoder.
 *
 * Input starting with '{' is a JSON line: parse it, encode it; whatever encodes and then
 * decodes must decode to JSON that encodes to the same bytes. Any other input is a binary
 * message: the tool's verdict must be the codec's (uiw_rpcrdma_decode, with the error
 * reply's name), and a message that decodes must come back byte for byte from its JSON
 * (also with --rpc).
 */
#include <stdlib.h>
#include <string.h>

#include <uiw/rpcrdma.h>

/* The tool is a program, not a library: build its sources into this target. */
#include "../tools/rpcrdma-decode/json.c"
#include "../tools/rpcrdma-decode/message.c"
#include "../tools/rpcrdma-decode/parse.c"
#include "../tools/rpcrdma-decode/render.c"
#include "../tools/rpcrdma-decode/rpc.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct rd_jdoc doc = {.root = -1};
static struct rd_buf bytes, json, again;
static struct rd_scratch scratch;

/* bytes[0..len) decoded (with opts) gives JSON that must encode back to exactly them. */
static void roundtrip(const uint8_t *msg, size_t len, int opts)
{
    char err[640];
    json.len = 0;
    int r = rd_decode_message(msg, len, opts, &json);
    if (r != 0)
        return;
    if (rd_json_parse(&doc, (const char *)json.p, json.len) != 0)
        abort();
    again.len = 0;
    if (rd_encode_message(&doc, &scratch, &again, err, sizeof err) != 0)
        abort();
    if (again.len != len || memcmp(again.p, msg, len) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[640];
    if (size > 1 << 16)
        return 0;
    if (size && data[0] == '{') {
        if (rd_json_parse(&doc, (const char *)data, size) != 0)
            return 0;
        bytes.len = 0;
        if (rd_encode_message(&doc, &scratch, &bytes, err, sizeof err) != 0)
            return 0;
        if (bytes.len > 1 << 20)
            return 0;
        /* doc is reused by roundtrip(): keep the bytes in their own buffer. */
        uint8_t *copy = malloc(bytes.len ? bytes.len : 1);
        if (!copy)
            return 0;
        memcpy(copy, bytes.p, bytes.len);
        roundtrip(copy, bytes.len, 0);
        free(copy);
        return 0;
    }

    struct uiw_rpcrdma_space_default st;
    struct uiw_rpcrdma_space sp;
    struct uiw_rpcrdma_hdr h;
    uiw_rpcrdma_space_init(&sp, &st);
    int rc = uiw_rpcrdma_decode(data, size, &h, &sp);
    json.len = 0;
    int r = rd_decode_message(data, size, 0, &json);
    if (r < 0)
        abort();
    if ((rc >= 0) != (r == 0))
        abort();
    if (rc < 0) {
        /* The error the codec would answer with, by its name in the message's version. */
        const char *name =
            uiw_rpcrdma_errcode_name(uiw_rpcrdma_wire_error(rc, h.vers), h.vers == 1 ? 1 : 2);
        if (!name)
            abort();
        size_t n = strlen(name);
        if (json.len != 12 + n || memcmp(json.p, "{\"error\":\"", 10) != 0 ||
            memcmp(json.p + 10, name, n) != 0 || memcmp(json.p + 10 + n, "\"}", 2) != 0)
            abort();
        return 0;
    }
    roundtrip(data, size, 0);
    roundtrip(data, size, RD_OPT_RPC);
    if ((size_t)rc == size) /* nothing follows the header: nothing to leave out */
        roundtrip(data, size, RD_OPT_RPC | RD_OPT_NO_PAYLOAD);
    return 0;
}
