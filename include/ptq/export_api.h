/* PTQ_API marks the functions libptq exports. The library is built with
 * -fvisibility=hidden, so anything without it (kernels, backends, op
 * tables) stays internal to libptq.so; tests/exported_symbols_test.py
 * checks the exported set against these headers. */
#ifndef PTQ_EXPORT_API_H
#define PTQ_EXPORT_API_H

#if defined(__GNUC__)
#define PTQ_API __attribute__((visibility("default")))
#else
#define PTQ_API
#endif

#endif
