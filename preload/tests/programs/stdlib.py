# A stdlib-heavy, deterministic Python workload for the preload tests: run with
# PYTHONMALLOC=malloc (every object allocation then goes through the preloaded malloc) and
# PYTHONHASHSEED=0; its output must match a run on glibc exactly.
import array
import base64
import bisect
import collections
import csv
import datetime
import decimal
import difflib
import email.parser
import fractions
import functools
import gc
import hashlib
import heapq
import io
import itertools
import json
import pickle
import random
import re
import sqlite3
import statistics
import struct
import textwrap
import threading
import unicodedata
import xml.etree.ElementTree as ET
import zlib


def digest(obj):
    return hashlib.sha256(repr(obj).encode()).hexdigest()[:16]


rng = random.Random(1234)

# Containers that grow and shrink (realloc across many size classes).
d = {}
for i in range(60000):
    d[f"key{i}"] = [i] * (i % 17)
    if i % 3 == 0:
        del d[f"key{i // 2}"]
print("dict", len(d), digest(sorted(d)[:50]))
lst = []
for i in range(200000):
    lst.append(i * i % 1009)
del lst[::3]
print("list", len(lst), sum(lst), digest(lst[-20:]))
s = "".join(chr(0x41 + i % 26) for i in range(100000))
print("str", len(s), s.count("XYZ"), hashlib.md5(s.encode()).hexdigest())
arr = array.array("d", (i / 7 for i in range(50000)))
print("array", round(sum(arr), 6), len(arr.tobytes()))

# Text processing.
words = re.findall(r"[a-z]+", ("lorem ipsum dolor sit amet consectetur " * 2000).lower())
counts = collections.Counter(words)
print("counter", counts.most_common(3))
text = textwrap.fill(" ".join(words[:400]), width=60)
print("wrap", len(text.splitlines()), digest(text))
a = [f"line {i}\n" for i in range(300)]
b = [f"line {i}\n" if i % 37 else f"changed {i}\n" for i in range(300)]
diff = list(difflib.unified_diff(a, b, "a", "b"))
print("diff", len(diff), digest(diff))
print("unicode", [unicodedata.name(c) for c in "aé€𝄞"])

# Serialization round trips.
obj = {"n": list(range(1000)), "nested": [{"k": i, "v": str(i) * 3} for i in range(500)]}
js = json.dumps(obj, sort_keys=True)
assert json.loads(js) == obj
pk = pickle.dumps(obj, protocol=4)
assert pickle.loads(pk) == obj
z = zlib.compress(js.encode() * 20, 9)
print("json", len(js), "pickle", len(pk), "zlib", len(z), zlib.crc32(z))
print("base64", base64.b64encode(hashlib.sha1(z).digest()).decode())
packed = struct.pack("<100q", *range(100))
print("struct", sum(struct.unpack("<100q", packed)))
root = ET.Element("root")
for i in range(2000):
    ET.SubElement(root, "item", id=str(i)).text = f"value {i}"
xml = ET.tostring(root)
parsed = ET.fromstring(xml)
print("xml", len(xml), len(parsed.findall("item")), parsed[1234].text)
msg = email.parser.Parser().parsestr("From: a@example.org\nTo: b@example.org\nSubject: test\n\nbody " * 1)
print("email", msg["Subject"], msg.get_payload().strip())
buf = io.StringIO()
w = csv.writer(buf)
for i in range(3000):
    w.writerow([i, f"name{i}", i * 1.5])
rows = list(csv.reader(io.StringIO(buf.getvalue())))
print("csv", len(rows), rows[2999])

# Numbers.
decimal.getcontext().prec = 60
print("decimal", decimal.Decimal(2).sqrt())
print("fraction", sum(fractions.Fraction(1, n) for n in range(1, 60)))
data = [rng.gauss(0, 1) for _ in range(20000)]
print("stats", round(statistics.mean(data), 9), round(statistics.stdev(data), 9))
print("date", datetime.date(2024, 2, 29) + datetime.timedelta(days=1000))

# Algorithms.
heap = [rng.randrange(10**6) for _ in range(50000)]
heapq.heapify(heap)
print("heap", [heapq.heappop(heap) for _ in range(5)])
sl = sorted(rng.randrange(10**6) for _ in range(20000))
print("bisect", bisect.bisect_left(sl, 500000))
print("perms", sum(1 for _ in itertools.permutations(range(8))))


@functools.lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


print("fib", fib(300) % 1000000007)

# SQLite through the Python module (its allocations too go through malloc).
con = sqlite3.connect(":memory:")
con.execute("create table t (id integer primary key, name text, score real)")
con.executemany("insert into t (name, score) values (?, ?)", ((f"n{i}", i % 97 / 3) for i in range(20000)))
print("sqlite", con.execute("select count(*), round(sum(score), 3), max(name) from t").fetchone())
con.close()

# Threads allocating at once; results collected in a fixed order.
results = [None] * 8


def work(k):
    h = hashlib.sha256()
    chunks = []
    for i in range(3000):
        chunks.append(bytes([k, i % 256]) * (i % 50 + 1))
        if len(chunks) > 100:
            h.update(b"".join(chunks))
            chunks.clear()
    results[k] = h.hexdigest()[:12]


threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("threads", results)


# Reference cycles for the garbage collector.
class Node:
    def __init__(self):
        self.other = None


for _ in range(20000):
    a, b = Node(), Node()
    a.other, b.other = b, a
print("gc", gc.collect() >= 0)
print("done")
