#include <errno.h>

#include <uiw/error.h>

#include "test.h"

TEST(strerror_errno)
{
    CHECK_STR(uiw_strerror(0), "Success");
    CHECK_STR(uiw_strerror(-EINVAL), strerror(EINVAL));
    CHECK_STR(uiw_errname(-EINVAL), "EINVAL");
    CHECK(!uiw_error_is_fatal(-EAGAIN));
    CHECK(uiw_error_is_fatal(-EPROTO));
    CHECK_STR(uiw_strerror(-999999), "Unknown uiw error");
    CHECK(uiw_error_is_fatal(-999999));
}
