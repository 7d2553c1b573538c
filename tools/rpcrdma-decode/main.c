/*
 * rpcrdma-decode: decode RPC-over-RDMA Version One / Two transport headers into JSON that
 * mirrors their XDR, and encode such JSON back into headers. See man/rpcrdma-decode.1.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uiw/version.h>

#include "json.h"
#include "rpcrdma.h"

/* Largest input accepted: one message in binary mode, one line otherwise. */
#define MAX_INPUT (64u << 20)

static const char usage[] =
    "usage: rpcrdma-decode [--hex | --pcap] [--rpc] [--no-payload] [FILE]\n"
    "       rpcrdma-decode --encode [--binary] [FILE]\n"
    "       rpcrdma-decode --private HEX\n"
    "\n"
    "Decode one RPC-over-RDMA transport header (Version One, RFC 8166, or Version Two,\n"
    "draft-cel-nfsv4-rpcrdma-version-two-03, chosen by rdma_vers) into one JSON object\n"
    "that mirrors the version's XDR, or encode such objects back.\n"
    "\n"
    "  --hex         read one hex-encoded message per line, write one JSON object per line\n"
    "                (without --hex, all of FILE is one binary message)\n"
    "  --pcap        FILE is a pcap capture: decode each RDMA Send of its iWARP connections\n"
    "                (added keys: frame, src, dst; backward: RFC 8167's backward direction)\n"
    "  --rpc         also decode the ONC RPC header after RDMA_MSG / RDMA2_MSG (key \"rpc\")\n"
    "  --no-payload  leave out the bytes that follow the header (key \"payload\")\n"
    "  --encode      read one JSON object per line, write each encoding as a hex line\n"
    "  --binary      with --encode: write the raw bytes instead of hex lines\n"
    "  --private HEX decode RFC 8797 connection private data (the ULP private data of an\n"
    "                MPA Request or Reply; 4 leading bytes of RFC 6581 IRD/ORD words are\n"
    "                recognised too) into one JSON object\n"
    "  -h, --help    show this help\n"
    "  --version     show the version\n"
    "\n"
    "FILE defaults to standard input. Empty lines and lines starting with '#' are skipped.\n"
    "A message that does not decode prints {\"error\":\"NAME\"}, NAME being the error a\n"
    "receiver must answer (RDMA2_ERR_VERS, RDMA2_ERR_BAD_XDR, RDMA2_ERR_INVAL_PROC;\n"
    "Version One: ERR_VERS, ERR_CHUNK).\n"
    "Version One objects use RFC 8166's field names (a segment's handle, length and\n"
    "offset; a read chunk's position and target), Version Two the draft's (rdma_handle...).\n"
    "Exit status: 0 if every message was decoded or encoded, 1 if one was not (after\n"
    "all input was read) or on an I/O error, 2 for a usage error.\n";

struct opts {
    int hex, pcap, encode, binary, flags;
    const char *file;
};

static int emit(const struct rd_buf *b)
{
    return fwrite(b->p, 1, b->len, stdout) == b->len ? 0 : -EIO;
}

static int is_blank(const char *line, size_t n)
{
    size_t i = 0;
    while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\n'))
        i++;
    return i == n || line[i] == '#';
}

/* Binary mode: the whole input is one message. */
static int decode_binary(FILE *in, const struct opts *o, struct rd_buf *msg, struct rd_buf *out)
{
    unsigned char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, in)) > 0) {
        if (msg->len + n > MAX_INPUT) {
            fprintf(stderr, "rpcrdma-decode: input larger than %u bytes\n", MAX_INPUT);
            return 1;
        }
        rd_buf_put(msg, chunk, n);
    }
    if (ferror(in)) {
        perror("rpcrdma-decode: read");
        return 1;
    }
    if (msg->oom)
        return 1;
    int r = rd_decode_message(msg->p ? msg->p : (const uint8_t *)"", msg->len, o->flags, out);
    if (r < 0)
        return 1;
    rd_buf_put(out, "\n", 1);
    if (out->oom || emit(out) != 0)
        return 1;
    return r;
}

static int each_line(FILE *in, const struct opts *o, struct rd_buf *msg, struct rd_buf *out)
{
    struct rd_scratch sc = {0};
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    unsigned long lineno = 0;
    int status = 0;
    bool fatal = false; /* an I/O error or no memory: stop reading */
    struct rd_jdoc doc = {.root = -1};
    char err[640];

    while ((got = getline(&line, &cap, in)) >= 0) {
        lineno++;
        size_t n = (size_t)got;
        if (n > MAX_INPUT) {
            fprintf(stderr, "rpcrdma-decode: line %lu: longer than %u bytes\n", lineno, MAX_INPUT);
            status = 1;
            fatal = true;
            break;
        }
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            n--;
        if (is_blank(line, n))
            continue;
        msg->len = 0;
        out->len = 0;
        if (o->encode) {
            int r = rd_json_parse(&doc, line, n);
            if (r == 0)
                r = rd_encode_message(&doc, &sc, msg, err, sizeof err);
            else
                snprintf(err, sizeof err, "JSON syntax at byte %zu: %s", doc.errpos, doc.err);
            if (r == -ENOMEM || msg->oom) {
                status = 1;
                fatal = true;
                break;
            }
            if (r != 0) {
                fprintf(stderr, "rpcrdma-decode: line %lu: %s\n", lineno, err);
                status = 1;
                continue;
            }
            if (o->binary) {
                if (emit(msg) != 0) {
                    status = 1;
                    fatal = true;
                    break;
                }
                continue;
            }
            rd_buf_hex(out, msg->p, msg->len);
        } else {
            if (rd_hex_decode(msg, line, n, 1, 0) != 0) {
                if (msg->oom) {
                    status = 1;
                    fatal = true;
                    break;
                }
                fprintf(stderr, "rpcrdma-decode: line %lu: not hex\n", lineno);
                status = 1;
                continue;
            }
            int r =
                rd_decode_message(msg->p ? msg->p : (const uint8_t *)"", msg->len, o->flags, out);
            if (r < 0) {
                status = 1;
                fatal = true;
                break;
            }
            if (r > 0)
                status = 1;
        }
        rd_buf_put(out, "\n", 1);
        if (out->oom || emit(out) != 0) {
            status = 1;
            fatal = true;
            break;
        }
    }
    if (!fatal && ferror(in)) {
        perror("rpcrdma-decode: read");
        status = 1;
    }
    free(line);
    rd_json_free(&doc);
    rd_scratch_free(&sc);
    return status;
}

/* --private: RFC 8797 private data (optionally after RFC 6581's IRD/ORD words). */
static int decode_private(const char *hex)
{
    struct rd_buf b = {0}, out = {0};
    if (rd_hex_decode(&b, hex, strlen(hex), 1, 0) != 0 || b.oom) {
        fprintf(stderr, "rpcrdma-decode: --private: not hex\n");
        rd_buf_free(&b);
        return 2;
    }
    const uint8_t *p = b.p;
    size_t n = b.len;
    struct uiw_rpcrdma_cm_private cp;
    int ird = -1, ord = -1;
    int r = uiw_rpcrdma_cm_private_decode(p, n, &cp);
    if (r != 0 && n >= 4 + UIW_RPCRDMA_CM_PRIVATE_LEN &&
        uiw_rpcrdma_cm_private_decode(p + 4, n - 4, &cp) == 0) {
        ird = (p[0] << 8 | p[1]) & 0x3FFF;
        ord = (p[2] << 8 | p[3]) & 0x3FFF;
        p += 4;
        n -= 4;
        r = 0;
    }
    int status = 0;
    if (r != 0) {
        rd_buf_puts(&out, r == -EINVAL ? "{\"error\":\"shorter than 8 bytes\"}"
                                       : "{\"error\":\"not RFC 8797 private data\"}");
        status = 1;
    } else {
        char line[512];
        int k = snprintf(line, sizeof(line),
                         "{\"format_identifier\":%u,\"version\":%u,\"reserved\":%u,"
                         "\"remote_invalidation\":%s,\"send_size\":%u,\"receive_size\":%u",
                         cp.magic, cp.version, cp.reserved,
                         cp.remote_invalidation ? "true" : "false", cp.send_size, cp.recv_size);
        rd_buf_put(&out, line, (size_t)k);
        if (ird >= 0) {
            k = snprintf(line, sizeof(line), ",\"mpa_ird\":%d,\"mpa_ord\":%d", ird, ord);
            rd_buf_put(&out, line, (size_t)k);
        }
        if (n > UIW_RPCRDMA_CM_PRIVATE_LEN) {
            k = snprintf(line, sizeof(line), ",\"trailing\":%zu", n - UIW_RPCRDMA_CM_PRIVATE_LEN);
            rd_buf_put(&out, line, (size_t)k);
        }
        rd_buf_put(&out, "}", 1);
    }
    rd_buf_put(&out, "\n", 1);
    if (out.oom || emit(&out) != 0)
        status = 1;
    rd_buf_free(&b);
    rd_buf_free(&out);
    return status;
}

int main(int argc, char **argv)
{
    struct opts o = {0};
    int files = 0;
    const char *priv = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--private") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "rpcrdma-decode: --private needs HEX\n%s", usage);
                return 2;
            }
            priv = argv[++i];
        } else if (strcmp(a, "--hex") == 0) {
            o.hex = 1;
        } else if (strcmp(a, "--pcap") == 0) {
            o.pcap = 1;
        } else if (strcmp(a, "--encode") == 0) {
            o.encode = 1;
        } else if (strcmp(a, "--binary") == 0) {
            o.binary = 1;
        } else if (strcmp(a, "--rpc") == 0) {
            o.flags |= RD_OPT_RPC;
        } else if (strcmp(a, "--no-payload") == 0) {
            o.flags |= RD_OPT_NO_PAYLOAD;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(usage, stdout);
            return fflush(stdout) == 0 ? 0 : 1;
        } else if (strcmp(a, "--version") == 0) {
            printf("rpcrdma-decode (uiw) %s\n", UIW_VERSION_STRING);
            return fflush(stdout) == 0 ? 0 : 1;
        } else if (strcmp(a, "--") == 0 && i + 1 < argc) {
            o.file = argv[++i];
            files++;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "rpcrdma-decode: unknown option %s\n%s", a, usage);
            return 2;
        } else {
            o.file = a;
            files++;
        }
    }
    if (priv && (files || o.hex || o.pcap || o.encode || o.binary || o.flags)) {
        fprintf(stderr, "rpcrdma-decode: --private takes no other argument\n%s", usage);
        return 2;
    }
    if (priv) {
        int st = decode_private(priv);
        return fflush(stdout) == 0 ? st : 1;
    }
    if (files > 1 || (o.binary && !o.encode) || (o.pcap && (o.hex || o.encode)) ||
        (o.encode && (o.hex || (o.flags & (RD_OPT_RPC | RD_OPT_NO_PAYLOAD))))) {
        fprintf(stderr, "rpcrdma-decode: conflicting arguments\n%s", usage);
        return 2;
    }
    FILE *in = stdin;
    if (o.file && strcmp(o.file, "-") != 0) {
        in = fopen(o.file, o.hex || o.encode ? "r" : "rb");
        if (!in) {
            fprintf(stderr, "rpcrdma-decode: %s: %s\n", o.file, strerror(errno));
            return 1;
        }
    }
    struct rd_buf msg = {0}, out = {0};
    int status;
    if (o.pcap) {
        status = rd_decode_pcap(in, o.flags, stdout, stderr);
        if (status == -ENOMEM)
            msg.oom = 1;
        else if (status < 0)
            status = 1;
    } else {
        status =
            o.hex || o.encode ? each_line(in, &o, &msg, &out) : decode_binary(in, &o, &msg, &out);
    }
    if (msg.oom || out.oom) {
        fprintf(stderr, "rpcrdma-decode: out of memory\n");
        status = 1;
    }
    if (in != stdin)
        fclose(in);
    if (fflush(stdout) != 0) {
        perror("rpcrdma-decode: write");
        status = 1;
    }
    rd_buf_free(&msg);
    rd_buf_free(&out);
    return status;
}
