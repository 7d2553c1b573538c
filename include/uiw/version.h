/*
 * uiw's version. UIW_VERSION_* describe the headers compiled against;
 * uiw_version_string() the library linked at run time. The build reads the numbers below
 * (this file is the version's one source).
 */
#ifndef UIW_VERSION_H
#define UIW_VERSION_H

#include <uiw/export.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UIW_VERSION_MAJOR 0
#define UIW_VERSION_MINOR 1
#define UIW_VERSION_PATCH 0

#define UIW_VERSION_HEX ((UIW_VERSION_MAJOR << 16) | (UIW_VERSION_MINOR << 8) | UIW_VERSION_PATCH)

/* "MAJOR.MINOR.PATCH" of the headers. */
#define UIW_VERSION_STRING                                                                         \
    UIW__VERSION_STR(UIW_VERSION_MAJOR)                                                            \
    "." UIW__VERSION_STR(UIW_VERSION_MINOR) "." UIW__VERSION_STR(UIW_VERSION_PATCH)
#define UIW__VERSION_STR(x)  UIW__VERSION_STR2(x)
#define UIW__VERSION_STR2(x) #x

/* The version of the library in use, as "MAJOR.MINOR.PATCH". */
UIW_EXTERN const char *uiw_version_string(void);

/* The same as UIW_VERSION_HEX would be in the library's own headers. */
UIW_EXTERN unsigned uiw_version(void);

#ifdef __cplusplus
}
#endif
#endif
