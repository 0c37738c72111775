/* C input for the bundled trace traces/gcc-cc1.log.zst (traces/record.sh compiles it with
 * `gcc -O2 -g -c` and keeps the log of cc1, the compiler proper). A small, complete program
 * of the kind a compiler sees every day: a calculator language with a lexer, a recursive
 * descent parser building a tree, an evaluator with a hash table of variables, and a driver.
 * Usage (once built): workload 'x = 3; y = x * (x + 4); print y - 1'. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors --------------------------------------------------------------------------- */

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("workload: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) die("out of memory (%zu bytes)", n);
    return p;
}

static char *xstrndup(const char *s, size_t n) {
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

/* ---- lexer ---------------------------------------------------------------------------- */

enum tok { T_END, T_NUM, T_NAME, T_PRINT, T_IF, T_ELSE, T_WHILE, T_OP, T_LP, T_RP, T_LB, T_RB,
           T_SEMI, T_ASSIGN };

struct lexer {
    const char *src, *at;
    enum tok kind;
    double num;
    char name[64];
    char op[3];
    int line;
};

static const struct { const char *word; enum tok kind; } KEYWORDS[] = {
    {"print", T_PRINT}, {"if", T_IF}, {"else", T_ELSE}, {"while", T_WHILE},
};

static void next(struct lexer *lx) {
    const char *p = lx->at;
    for (;;) {
        while (isspace((unsigned char)*p)) lx->line += *p++ == '\n';
        if (*p == '#') {
            while (*p && *p != '\n') p++;
            continue;
        }
        break;
    }
    if (!*p) {
        lx->kind = T_END;
    } else if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
        char *end;
        errno = 0;
        lx->num = strtod(p, &end);
        if (errno) die("line %d: bad number", lx->line);
        p = end;
        lx->kind = T_NUM;
    } else if (isalpha((unsigned char)*p) || *p == '_') {
        size_t n = 0;
        while (isalnum((unsigned char)p[n]) || p[n] == '_') n++;
        if (n >= sizeof lx->name) die("line %d: name too long", lx->line);
        memcpy(lx->name, p, n);
        lx->name[n] = 0;
        p += n;
        lx->kind = T_NAME;
        for (size_t i = 0; i < sizeof KEYWORDS / sizeof *KEYWORDS; i++)
            if (strcmp(lx->name, KEYWORDS[i].word) == 0) lx->kind = KEYWORDS[i].kind;
    } else {
        static const char *const two[] = {"==", "!=", "<=", ">=", "&&", "||"};
        lx->op[0] = *p;
        lx->op[1] = lx->op[2] = 0;
        for (size_t i = 0; i < sizeof two / sizeof *two; i++)
            if (p[0] == two[i][0] && p[1] == two[i][1]) lx->op[1] = p[1];
        p += lx->op[1] ? 2 : 1;
        switch (lx->op[0]) {
        case '(': lx->kind = T_LP; break;
        case ')': lx->kind = T_RP; break;
        case '{': lx->kind = T_LB; break;
        case '}': lx->kind = T_RB; break;
        case ';': lx->kind = T_SEMI; break;
        case '=': lx->kind = lx->op[1] ? T_OP : T_ASSIGN; break;
        default:
            if (!strchr("+-*/%<>!&|", lx->op[0])) die("line %d: unexpected '%c'", lx->line, *p);
            lx->kind = T_OP;
        }
    }
    lx->at = p;
}

/* ---- syntax tree ---------------------------------------------------------------------- */

enum node_kind { N_NUM, N_VAR, N_UNARY, N_BINARY, N_ASSIGN, N_PRINT, N_IF, N_WHILE, N_BLOCK };

struct node {
    enum node_kind kind;
    char op[3];
    double num;
    char *name;
    struct node *a, *b, *c;
    struct node **list;
    size_t len, cap;
};

static struct node *node(enum node_kind kind) {
    struct node *n = xmalloc(sizeof *n);
    memset(n, 0, sizeof *n);
    n->kind = kind;
    return n;
}

static void push(struct node *block, struct node *item) {
    if (block->len == block->cap) {
        block->cap = block->cap ? block->cap * 2 : 4;
        block->list = realloc(block->list, block->cap * sizeof *block->list);
        if (!block->list) die("out of memory");
    }
    block->list[block->len++] = item;
}

static void free_tree(struct node *n) {
    if (!n) return;
    free_tree(n->a);
    free_tree(n->b);
    free_tree(n->c);
    for (size_t i = 0; i < n->len; i++) free_tree(n->list[i]);
    free(n->list);
    free(n->name);
    free(n);
}

/* ---- parser (precedence climbing) ----------------------------------------------------- */

static struct node *expression(struct lexer *lx, int min_prec);
static struct node *statement(struct lexer *lx);

static int precedence(const char *op) {
    static const struct { const char *op; int prec; } table[] = {
        {"||", 1}, {"&&", 2}, {"==", 3}, {"!=", 3}, {"<", 4}, {">", 4}, {"<=", 4}, {">=", 4},
        {"+", 5}, {"-", 5}, {"*", 6}, {"/", 6}, {"%", 6},
    };
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (strcmp(op, table[i].op) == 0) return table[i].prec;
    return -1;
}

static void expect(struct lexer *lx, enum tok kind, const char *what) {
    if (lx->kind != kind) die("line %d: expected %s", lx->line, what);
    next(lx);
}

static struct node *primary(struct lexer *lx) {
    struct node *n;
    switch (lx->kind) {
    case T_NUM:
        n = node(N_NUM);
        n->num = lx->num;
        next(lx);
        return n;
    case T_NAME:
        n = node(N_VAR);
        n->name = xstrndup(lx->name, strlen(lx->name));
        next(lx);
        return n;
    case T_LP:
        next(lx);
        n = expression(lx, 0);
        expect(lx, T_RP, "')'");
        return n;
    case T_OP:
        if (lx->op[0] == '-' || lx->op[0] == '!') {
            n = node(N_UNARY);
            n->op[0] = lx->op[0];
            next(lx);
            n->a = primary(lx);
            return n;
        }
        /* fall through */
    default:
        die("line %d: expected an expression", lx->line);
    }
    return NULL;
}

static struct node *expression(struct lexer *lx, int min_prec) {
    struct node *left = primary(lx);
    while (lx->kind == T_OP) {
        int prec = precedence(lx->op);
        if (prec < min_prec || prec < 0) break;
        struct node *n = node(N_BINARY);
        memcpy(n->op, lx->op, sizeof n->op);
        next(lx);
        n->a = left;
        n->b = expression(lx, prec + 1);
        left = n;
    }
    return left;
}

static struct node *block(struct lexer *lx) {
    struct node *b = node(N_BLOCK);
    expect(lx, T_LB, "'{'");
    while (lx->kind != T_RB && lx->kind != T_END) push(b, statement(lx));
    expect(lx, T_RB, "'}'");
    return b;
}

static struct node *statement(struct lexer *lx) {
    struct node *n;
    switch (lx->kind) {
    case T_PRINT:
        next(lx);
        n = node(N_PRINT);
        n->a = expression(lx, 0);
        break;
    case T_IF:
        next(lx);
        n = node(N_IF);
        n->a = expression(lx, 0);
        n->b = block(lx);
        if (lx->kind == T_ELSE) {
            next(lx);
            n->c = lx->kind == T_IF ? statement(lx) : block(lx);
        }
        return n;
    case T_WHILE:
        next(lx);
        n = node(N_WHILE);
        n->a = expression(lx, 0);
        n->b = block(lx);
        return n;
    case T_NAME: {
        char name[64];
        const char *save = lx->at;
        strcpy(name, lx->name);
        next(lx);
        if (lx->kind == T_ASSIGN) {
            next(lx);
            n = node(N_ASSIGN);
            n->name = xstrndup(name, strlen(name));
            n->a = expression(lx, 0);
            break;
        }
        lx->at = save; /* not an assignment: re-read the name as an expression */
        strcpy(lx->name, name);
        lx->kind = T_NAME;
        n = expression(lx, 0);
        break;
    }
    default:
        n = expression(lx, 0);
    }
    if (lx->kind == T_SEMI) next(lx);
    return n;
}

/* ---- variables: an open-addressing hash table ----------------------------------------- */

struct var {
    char *name;
    double value;
};

struct env {
    struct var *slots;
    size_t cap, used;
};

static uint64_t hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

static struct var *lookup(struct env *e, const char *name, int create) {
    if (create && (e->used + 1) * 4 > e->cap * 3) {
        struct env bigger = {calloc(e->cap ? e->cap * 2 : 16, sizeof(struct var)),
                             e->cap ? e->cap * 2 : 16, 0};
        if (!bigger.slots) die("out of memory");
        for (size_t i = 0; i < e->cap; i++)
            if (e->slots[i].name) *lookup(&bigger, e->slots[i].name, 1) = e->slots[i];
        free(e->slots);
        *e = bigger;
    }
    if (!e->cap) return NULL;
    for (size_t i = hash(name) & (e->cap - 1);; i = (i + 1) & (e->cap - 1)) {
        struct var *v = &e->slots[i];
        if (!v->name) {
            if (!create) return NULL;
            v->name = xstrndup(name, strlen(name));
            e->used++;
            return v;
        }
        if (strcmp(v->name, name) == 0) return v;
    }
}

/* ---- evaluation ----------------------------------------------------------------------- */

static double eval(struct node *n, struct env *e) {
    struct var *v;
    double a, b;
    switch (n->kind) {
    case N_NUM: return n->num;
    case N_VAR:
        v = lookup(e, n->name, 0);
        if (!v) die("undefined variable %s", n->name);
        return v->value;
    case N_UNARY:
        a = eval(n->a, e);
        return n->op[0] == '-' ? -a : !a;
    case N_BINARY:
        a = eval(n->a, e);
        if (n->op[0] == '&' && !a) return 0;
        if (n->op[0] == '|' && n->op[1] == '|' && a) return 1;
        b = eval(n->b, e);
        switch (n->op[0]) {
        case '+': return a + b;
        case '-': return a - b;
        case '*': return a * b;
        case '/': if (b == 0) die("division by zero"); return a / b;
        case '%': if ((long long)b == 0) die("division by zero"); return (double)((long long)a % (long long)b);
        case '<': return n->op[1] ? a <= b : a < b;
        case '>': return n->op[1] ? a >= b : a > b;
        case '=': return a == b;
        case '!': return a != b;
        default: return b != 0;
        }
    case N_ASSIGN:
        a = eval(n->a, e);
        lookup(e, n->name, 1)->value = a;
        return a;
    case N_PRINT:
        a = eval(n->a, e);
        printf("%.17g\n", a);
        return a;
    case N_IF:
        if (eval(n->a, e) != 0) return eval(n->b, e);
        return n->c ? eval(n->c, e) : 0;
    case N_WHILE:
        a = 0;
        while (eval(n->a, e) != 0) a = eval(n->b, e);
        return a;
    case N_BLOCK:
        a = 0;
        for (size_t i = 0; i < n->len; i++) a = eval(n->list[i], e);
        return a;
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *program = argc > 1 ? argv[1]
        : "n = 30; a = 0; b = 1; while n > 0 { t = a + b; a = b; b = t; n = n - 1 } print a";
    struct lexer lx = {program, program, T_END, 0, {0}, {0}, 1};
    struct env env = {NULL, 0, 0};
    struct node *top = node(N_BLOCK);
    next(&lx);
    while (lx.kind != T_END) push(top, statement(&lx));
    eval(top, &env);
    free_tree(top);
    for (size_t i = 0; i < env.cap; i++) free(env.slots[i].name);
    free(env.slots);
    return 0;
}
