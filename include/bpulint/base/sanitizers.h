// BPULINT_ASAN: 1 when this translation unit is built with AddressSanitizer
// (GCC defines __SANITIZE_ADDRESS__, clang answers __has_feature), else 0.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define BPULINT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BPULINT_ASAN 1
#endif
#endif
#ifndef BPULINT_ASAN
#define BPULINT_ASAN 0
#endif
