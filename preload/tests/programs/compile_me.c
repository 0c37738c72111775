/* Compiled by gcc under the preloaded allocator in the preload tests (gcc's own cc1, as and
 * collect2 then run on it). The generated assembly and the built program's output must match
 * a glibc run exactly. A small stack-machine interpreter: enough code to keep the optimizer
 * busy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op { PUSH, ADD, DUP, SWAP, ROT, JNZ, DEC, HALT };

struct insn {
    enum op op;
    long arg;
};

/* Runs `code` on `stack`; returns the number of instructions executed. */
static long run(const struct insn *code, long *stack) {
    int sp = 0, pc = 0;
    long steps = 0;
    for (;;) {
        const struct insn *i = &code[pc++];
        steps++;
        switch (i->op) {
        case PUSH: stack[sp++] = i->arg; break;
        case ADD: sp--; stack[sp - 1] += stack[sp]; break;
        case DUP: stack[sp] = stack[sp - 1]; sp++; break;
        case SWAP: { long t = stack[sp - 1]; stack[sp - 1] = stack[sp - 2]; stack[sp - 2] = t; } break;
        case ROT: { long a = stack[sp - 3]; stack[sp - 3] = stack[sp - 2]; stack[sp - 2] = stack[sp - 1]; stack[sp - 1] = a; } break;
        case JNZ: if (stack[--sp]) pc = (int)i->arg; break;
        case DEC: stack[sp - 1]--; break;
        case HALT: return steps;
        }
    }
}

struct node {
    struct node *left, *right;
    long key;
};

static struct node *insert(struct node *n, long key) {
    if (!n) {
        n = calloc(1, sizeof *n);
        n->key = key;
    } else if (key < n->key) {
        n->left = insert(n->left, key);
    } else {
        n->right = insert(n->right, key);
    }
    return n;
}

static long depth(const struct node *n) {
    if (!n) return 0;
    long l = depth(n->left), r = depth(n->right);
    return 1 + (l > r ? l : r);
}

static void release(struct node *n) {
    if (!n) return;
    release(n->left);
    release(n->right);
    free(n);
}

int main(void) {
    /* acc = 0, n = 1000; while (n) { acc += n; n--; } */
    struct insn prog[] = {
        {PUSH, 0}, {PUSH, 1000}, {DUP, 0}, {JNZ, 5}, {HALT, 0}, {DUP, 0},
        {ROT, 0},  {ADD, 0},     {SWAP, 0}, {DEC, 0}, {PUSH, 1}, {JNZ, 2},
    };
    long stack[64];
    memset(stack, 0, sizeof stack);
    long steps = run(prog, stack);
    printf("sum %ld in %ld steps\n", stack[0], steps);
    struct node *root = NULL;
    for (long i = 0; i < 20000; i++) root = insert(root, (i * 7919) % 20011);
    printf("depth %ld\n", depth(root));
    release(root);
    return 0;
}
