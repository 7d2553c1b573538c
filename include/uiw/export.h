/*
 * UIW_EXTERN marks a declaration as part of uiw's public API: the shared libraries are
 * built with -fvisibility=hidden, and only declarations carrying UIW_EXTERN are exported.
 * Every function (and object) declared in an installed header carries it; nothing else
 * does.
 */
#ifndef UIW_EXPORT_H
#define UIW_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define UIW_EXTERN __attribute__((visibility("default")))
#else
#define UIW_EXTERN
#endif

#endif
