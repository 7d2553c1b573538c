#include <uiw/version.h>

#define UIW__STR2(x) #x
#define UIW__STR(x)  UIW__STR2(x)

const char *uiw_version_string(void)
{
    return UIW__STR(UIW_VERSION_MAJOR) "." UIW__STR(UIW_VERSION_MINOR) "." UIW__STR(
        UIW_VERSION_PATCH);
}

unsigned uiw_version(void)
{
    return UIW_VERSION_HEX;
}
