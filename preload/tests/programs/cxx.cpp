// C++ allocation through liballoclab.so: every operator new/delete variant, new-handler and
// std::bad_alloc semantics, and a sized delete with the wrong size.
// Usage: cxx <case>. Prints "cxx: ok" when every check of "semantics" passed.
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <new>

static int failures;
#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);  \
            failures++;                                                      \
        }                                                                    \
    } while (0)

struct alignas(256) Wide {
    char bytes[300];
};

static int handler_calls;
static void handler() {
    // Give up on the second call: new must then throw std::bad_alloc.
    if (++handler_calls == 2) std::set_new_handler(nullptr);
}

// Whether `p` is an allocation of the preloaded heap: malloc_usable_size aborts otherwise.
static bool ours(void *p, size_t size) { return malloc_usable_size(p) >= size; }

// The object file that defines `symbol` in the process.
static const char *defined_in(const char *symbol) {
    Dl_info info;
    void *f = dlsym(RTLD_DEFAULT, symbol);
    if (!f || !dladdr(f, &info) || !info.dli_fname) return "";
    return info.dli_fname;
}

static void semantics() {
    const char *names[] = {"_Znwm", "_Znam", "_ZdlPv", "_ZdlPvm", "_ZnwmSt11align_val_t",
                           "_ZdaPvmSt11align_val_t", "_ZnwmRKSt9nothrow_t"};
    for (const char *n : names) {
        if (!strstr(defined_in(n), "liballoclab")) {
            fprintf(stderr, "FAIL: %s comes from %s\n", n, defined_in(n));
            failures++;
        }
    }
    char *a = new char[100];
    CHECK(ours(a, 100));
    memset(a, 1, 100);
    delete[] a;
    int *i = new int(7);
    CHECK(ours(i, sizeof(int)) && *i == 7);
    delete i;
    void *raw = ::operator new(5000);
    CHECK(ours(raw, 5000));
    ::operator delete(raw, 5000);
    void *nt = ::operator new(64, std::nothrow);
    CHECK(nt && ours(nt, 64));
    ::operator delete(nt, std::nothrow);
    void *nta = ::operator new[](64, std::nothrow);
    CHECK(nta && ours(nta, 64));
    ::operator delete[](nta, std::nothrow);
    Wide *w = new Wide;
    CHECK(((uintptr_t)w) % 256 == 0 && ours(w, sizeof(Wide)));
    delete w;
    Wide *ws = new Wide[3];
    CHECK(((uintptr_t)ws) % 256 == 0);
    delete[] ws;
    void *al = ::operator new(100, std::align_val_t(4096));
    CHECK(((uintptr_t)al) % 4096 == 0 && ours(al, 100));
    ::operator delete(al, 100, std::align_val_t(4096));
    void *aln = ::operator new[](100, std::align_val_t(128), std::nothrow);
    CHECK(aln && ((uintptr_t)aln) % 128 == 0);
    ::operator delete[](aln, std::align_val_t(128), std::nothrow);
    void *alu = ::operator new[](10, std::align_val_t(64));
    ::operator delete[](alu, std::align_val_t(64));
    void *zero = ::operator new(0);
    void *zero2 = ::operator new(0);
    CHECK(zero && zero2 && zero != zero2);
    ::operator delete(zero, (size_t)0);
    ::operator delete(zero2);

    // Out of memory: nothrow gives null; new calls the handler until it is null, then throws.
    const size_t too_much = (size_t)1 << 62;
    CHECK(::operator new(too_much, std::nothrow) == nullptr);
    CHECK(::operator new[](too_much, std::align_val_t(64), std::nothrow) == nullptr);
    bool caught = false;
    try {
        void *p = ::operator new(too_much);
        fprintf(stderr, "no exception: %p\n", p);
    } catch (const std::bad_alloc &) {
        caught = true;
    }
    CHECK(caught);
    caught = false;
    std::set_new_handler(handler);
    try {
        char *p = new char[too_much];
        fprintf(stderr, "no exception: %p\n", (void *)p);
    } catch (const std::bad_alloc &e) {
        caught = strcmp(e.what(), "std::bad_alloc") == 0;
    }
    CHECK(caught && handler_calls == 2);
    caught = false;
    try {
        void *p = ::operator new(too_much, std::align_val_t(64));
        fprintf(stderr, "no exception: %p\n", p);
    } catch (const std::bad_alloc &) {
        caught = true;
    }
    CHECK(caught);
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    const char *c = argv[1];
    if (!strcmp(c, "semantics")) {
        semantics();
        if (failures == 0) printf("cxx: ok\n");
        return failures != 0;
    }
    printf("reached: %s\n", c);
    fflush(stdout);
    if (!strcmp(c, "sized-delete-wrong")) {
        void *p = ::operator new(100);
        ::operator delete(p, 2000);
    } else if (!strcmp(c, "sized-delete-wrong-class")) {
        void *p = ::operator new(40);
        ::operator delete(p, 20);
    } else if (!strcmp(c, "sized-delete-wrong-large")) {
        /* Within the allocation's pages: only a record of the requested size tells. */
        void *p = ::operator new(20000);
        ::operator delete(p, 19990);
    } else if (!strcmp(c, "sized-delete-wrong-large-aligned")) {
        void *p = ::operator new(16384, std::align_val_t(8192));
        ::operator delete(p, 16374, std::align_val_t(8192));
    } else if (!strcmp(c, "sized-delete-right-large")) {
        void *p = ::operator new(20000);
        ::operator delete(p, 20000);
        void *q = ::operator new(16384, std::align_val_t(8192));
        ::operator delete(q, 16384, std::align_val_t(8192));
    } else if (!strcmp(c, "array-delete-of-interior")) {
        char *p = new char[100];
        delete[](p + 16);
    } else {
        return 4;
    }
    printf("survived: %s\n", c);
    return 0;
}
