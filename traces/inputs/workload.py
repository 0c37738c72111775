# Python workload for the bundled trace traces/python3-stdlib.log.zst (traces/record.sh runs
# it with PYTHONMALLOC=malloc, so that every object goes through malloc): a small log-analysis
# job written with the standard library, as a script would be. Deterministic (fixed seeds,
# PYTHONHASHSEED=0); prints a short summary.
import collections
import concurrent.futures
import csv
import dataclasses
import datetime
import difflib
import hashlib
import io
import json
import random
import re
import statistics
import string
import textwrap
import xml.etree.ElementTree as ET

rng = random.Random(20240601)
PATHS = ["/", "/index.html", "/api/items", "/api/users", "/static/app.js", "/login", "/search"]
AGENTS = ["curl/8.1", "Mozilla/5.0 (X11; Linux x86_64) Firefox/126.0", "python-requests/2.31"]


@dataclasses.dataclass
class Hit:
    when: datetime.datetime
    ip: str
    method: str
    path: str
    status: int
    size: int
    agent: str


def make_line(i):
    when = datetime.datetime(2024, 6, 1) + datetime.timedelta(seconds=i * 7 + rng.randrange(7))
    ip = ".".join(str(rng.randrange(1, 255)) for _ in range(4))
    path = rng.choice(PATHS)
    if rng.random() < 0.3:
        path += "?q=" + "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randrange(3, 12)))
    status = rng.choice([200] * 12 + [304, 404, 500])
    return '%s - - [%s] "%s %s HTTP/1.1" %d %d "%s"' % (
        ip, when.strftime("%d/%b/%Y:%H:%M:%S +0000"), rng.choice(["GET", "GET", "POST"]), path,
        status, rng.randrange(100, 50000), rng.choice(AGENTS))


LINE = re.compile(r'(\S+) - - \[([^\]]+)\] "(\S+) (\S+) [^"]*" (\d+) (\d+) "([^"]*)"')


def parse(chunk):
    hits = []
    for line in chunk:
        m = LINE.match(line)
        if m:
            ip, when, method, path, status, size, agent = m.groups()
            hits.append(Hit(datetime.datetime.strptime(when, "%d/%b/%Y:%H:%M:%S %z"), ip, method,
                            path, int(status), int(size), agent))
    return hits


lines = [make_line(i) for i in range(3000)]
chunks = [lines[i:i + 250] for i in range(0, len(lines), 250)]
with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
    hits = [h for part in pool.map(parse, chunks) for h in part]

by_path = collections.defaultdict(list)
for h in hits:
    by_path[h.path.split("?")[0]].append(h)
report = {}
for path, hs in sorted(by_path.items()):
    sizes = [h.size for h in hs]
    report[path] = {
        "hits": len(hs),
        "errors": sum(h.status >= 500 for h in hs),
        "mean": round(statistics.mean(sizes), 2),
        "median": statistics.median(sizes),
        "agents": collections.Counter(h.agent.split("/")[0] for h in hs).most_common(2),
    }
text = json.dumps(report, indent=2, sort_keys=True)
assert json.loads(text) == json.loads(json.dumps(report))

# Hourly buckets and a CSV export, read back.
hours = collections.Counter(h.when.replace(minute=0, second=0) for h in hits)
buf = io.StringIO()
w = csv.writer(buf)
for hour, n in sorted(hours.items()):
    w.writerow([hour.isoformat(), n])
rows = list(csv.reader(io.StringIO(buf.getvalue())))

# An XML version of the report, parsed again.
root = ET.Element("report")
for path, r in report.items():
    e = ET.SubElement(root, "path", name=path, hits=str(r["hits"]))
    for agent, n in r["agents"]:
        ET.SubElement(e, "agent", name=agent).text = str(n)
xml = ET.tostring(root)
again = ET.fromstring(xml)

# Queries seen, deduplicated, fuzzy-matched, wrapped.
queries = sorted({h.path.split("=", 1)[1] for h in hits if "=" in h.path})
close = {q: difflib.get_close_matches(q, queries[:150], n=2, cutoff=0.8) for q in queries[:150]}
wrapped = textwrap.fill(" ".join(queries[:2000]), width=72)

# A cache of digests that keeps growing while older entries are evicted.
cache = collections.OrderedDict()
for h in hits:
    key = h.ip + h.path
    if key in cache:
        cache.move_to_end(key)
    else:
        cache[key] = hashlib.sha1(key.encode()).hexdigest()
        if len(cache) > 5000:
            cache.popitem(last=False)

print("hits", len(hits), "paths", len(report), "hours", len(rows), "xml", len(xml),
      "queries", len(queries), "close", sum(map(len, close.values())), "wrapped",
      len(wrapped.splitlines()), "cache", len(cache), "agents", len(again.findall(".//agent")))
