#include <uiw/version.h>

const char *uiw_version_string(void)
{
    return UIW_VERSION_STRING;
}

unsigned uiw_version(void)
{
    return UIW_VERSION_HEX;
}
