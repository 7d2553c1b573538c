#!/usr/bin/env python3
"""A shared library exports exactly its public API.

    check_exports.py NM LIBRARY.so --headers H... --archives A...

The dynamic symbol table of LIBRARY.so must hold exactly the functions and objects that
the headers H declare with UIW_EXTERN: every exported name starts with uiw_ (never uiw__
or without the prefix), is declared so, and every such declaration is exported. And every
global uiw_ name defined in the layers' archives A (the library's objects) is among them:
a public-looking function without UIW_EXTERN fails here.
"""
import re
import subprocess
import sys


def symbols(nm, args):
    out = subprocess.run([nm] + args, check=True, capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 3 and len(f[-2]) == 1:
            names.add(f[-1].split('@')[0])
    return names


def declared(headers):
    names = set()
    for h in headers:
        text = open(h).read()
        text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
        text = re.sub(r'//[^\n]*', ' ', text)
        text = re.sub(r'^[ \t]*#[^\n]*', ' ', text, flags=re.M)
        for m in re.finditer(r'\bUIW_EXTERN\b([^;{]*?)\b(\w+)\s*(\(|\[|;)', text):
            names.add(m.group(2))
    return names


def main():
    argv = sys.argv[1:]
    nm, lib = argv[0], argv[1]
    headers = argv[argv.index('--headers') + 1:argv.index('--archives')]
    archives = argv[argv.index('--archives') + 1:]
    # The bounds the linker makes for the sections of libFuzzer's coverage instrumentation
    # (-fsanitize=fuzzer-no-link builds only) are not the library's.
    exported = {s for s in symbols(nm, ['-D', '--defined-only', lib])
                if not re.match(r'__(start|stop)___sancov_', s)}
    public = declared(headers)
    defined = {s for s in symbols(nm, ['-g', '--defined-only'] + archives)
               if s.startswith('uiw_') and not s.startswith('uiw__')}
    bad = []
    for s in sorted(exported):
        if not s.startswith('uiw_') or s.startswith('uiw__'):
            bad.append(f'exported but not a public name: {s}')
        elif s not in public:
            bad.append(f'exported but not declared UIW_EXTERN in the headers: {s}')
    for s in sorted(public - exported):
        bad.append(f'declared UIW_EXTERN but not exported: {s}')
    for s in sorted(defined - exported):
        bad.append(f'a uiw_ name defined without UIW_EXTERN (not exported): {s}')
    for b in bad:
        print(f'{lib}: {b}')
    print(f'{lib}: {len(exported)} exported, {len(public)} declared UIW_EXTERN')
    return 1 if bad else 0


sys.exit(main())
