#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <uiw/error.h>

struct errdesc {
    int code;
    int fatal;
    const char *name;
    const char *text;
};

static const struct errdesc errtab[] = {
#define UIW_ERR(name, value, fatal, text) {(value), (fatal), #name, (text)},
#include <uiw/err_wire.def>
#include <uiw/err_rnic.def>
#include <uiw/err_rpcrdma.def>
#undef UIW_ERR
    {0, 0, NULL, NULL}};

static const struct errdesc *lookup(int code)
{
    for (const struct errdesc *d = errtab; d->name; d++)
        if (d->code == code)
            return d;
    return NULL;
}

static const struct {
    int err;
    const char *name;
} errno_names[] = {
    {EPERM, "EPERM"},
    {ENOENT, "ENOENT"},
    {EINTR, "EINTR"},
    {EIO, "EIO"},
    {E2BIG, "E2BIG"},
    {EBADF, "EBADF"},
    {EAGAIN, "EAGAIN"},
    {ENOMEM, "ENOMEM"},
    {EACCES, "EACCES"},
    {EFAULT, "EFAULT"},
    {EBUSY, "EBUSY"},
    {EEXIST, "EEXIST"},
    {EINVAL, "EINVAL"},
    {ENOSPC, "ENOSPC"},
    {EPIPE, "EPIPE"},
    {ERANGE, "ERANGE"},
    {ENOSYS, "ENOSYS"},
    {ENOTSUP, "ENOTSUP"},
    {EMSGSIZE, "EMSGSIZE"},
    {EPROTO, "EPROTO"},
    {EBADMSG, "EBADMSG"},
    {EOVERFLOW, "EOVERFLOW"},
    {ENOTCONN, "ENOTCONN"},
    {ECONNRESET, "ECONNRESET"},
    {ETIMEDOUT, "ETIMEDOUT"},
    {ECONNREFUSED, "ECONNREFUSED"},
    {ECONNABORTED, "ECONNABORTED"},
    {EADDRINUSE, "EADDRINUSE"},
    {EALREADY, "EALREADY"},
    {EINPROGRESS, "EINPROGRESS"},
    {ESHUTDOWN, "ESHUTDOWN"},
    {ECANCELED, "ECANCELED"},
    {ENODATA, "ENODATA"},
};

const char *uiw_strerror(int code)
{
    if (code >= 0)
        return "Success";
    if (code > UIW_E_BASE)
        return strerror(-code);
    const struct errdesc *d = lookup(code);
    return d ? d->text : "Unknown uiw error";
}

const char *uiw_errname(int code)
{
    if (code >= 0)
        return "OK";
    if (code > UIW_E_BASE) {
        for (size_t i = 0; i < sizeof(errno_names) / sizeof(errno_names[0]); i++)
            if (errno_names[i].err == -code)
                return errno_names[i].name;
        return "E?";
    }
    const struct errdesc *d = lookup(code);
    return d ? d->name : "UIW_E_UNKNOWN";
}

int uiw_error_is_fatal(int code)
{
    if (code >= 0)
        return 0;
    if (code > UIW_E_BASE)
        return !(code == -EAGAIN || code == -EINTR || code == -EINPROGRESS || code == -ENOMEM ||
                 code == -ENOSPC || code == -EBUSY);
    const struct errdesc *d = lookup(code);
    return d ? d->fatal : 1;
}
