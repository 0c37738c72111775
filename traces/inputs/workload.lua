-- Lua 5.4 workload for the bundled trace traces/lua5.4.log.zst (traces/record.sh): a small
-- document pipeline as a Lua program would write it: records as tables, string building and
-- patterns, a least-recently-used cache, coroutine stages, a JSON-like serializer, closures,
-- and the incremental garbage collector freeing what each stage drops. Deterministic.
local seed = 42
local function rand(n)
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed % n
end

local words = {}
for w in ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron "
  .. "pi rho sigma tau upsilon phi chi psi omega"):gmatch("%a+") do
  words[#words + 1] = w
end

-- Stage 1: documents (tables of fields, strings built piece by piece).
local function document(i)
  local parts = {}
  for j = 1, 5 + rand(40) do parts[j] = words[rand(#words) + 1] end
  return { id = i, title = words[rand(#words) + 1] .. "-" .. i, body = table.concat(parts, " "),
           tags = { words[rand(#words) + 1], words[rand(#words) + 1] }, score = rand(1000) / 10 }
end

-- Stage 2: a coroutine that tokenizes and counts.
local function tokenizer(docs)
  return coroutine.wrap(function()
    for _, d in ipairs(docs) do
      local counts = {}
      for w in d.body:gmatch("%a+") do counts[w] = (counts[w] or 0) + 1 end
      coroutine.yield(d, counts)
    end
  end)
end

-- A least-recently-used cache of rendered documents (a linked list through tables).
local LRU = {}
LRU.__index = LRU
function LRU.new(cap) return setmetatable({ cap = cap, n = 0, map = {}, head = {}, }, LRU) end
function LRU:put(k, v)
  local node = self.map[k]
  if node then node.v = v return end
  node = { k = k, v = v, nxt = self.head.nxt }
  self.head.nxt = node
  self.map[k] = node
  self.n = self.n + 1
  if self.n > self.cap then
    -- Drop the oldest: walk to the end (the list is short enough).
    local prev, cur = self.head, self.head.nxt
    while cur.nxt do prev, cur = cur, cur.nxt end
    prev.nxt = nil
    self.map[cur.k] = nil
    self.n = self.n - 1
  end
end

-- A JSON-like serializer (recursion, string.format, table.concat).
local function serialize(v, out)
  local t = type(v)
  if t == "table" then
    if #v > 0 then
      out[#out + 1] = "["
      for i, x in ipairs(v) do
        if i > 1 then out[#out + 1] = "," end
        serialize(x, out)
      end
      out[#out + 1] = "]"
    else
      local keys = {}
      for k in pairs(v) do keys[#keys + 1] = tostring(k) end
      table.sort(keys)
      out[#out + 1] = "{"
      for i, k in ipairs(keys) do
        if i > 1 then out[#out + 1] = "," end
        out[#out + 1] = string.format("%q:", k)
        serialize(v[k] == nil and v[tonumber(k)] or v[k], out)
      end
      out[#out + 1] = "}"
    end
  elseif t == "string" then
    out[#out + 1] = string.format("%q", v)
  else
    out[#out + 1] = tostring(v)
  end
end

local total, rendered, cache = 0, 0, LRU.new(200)
local index = {}
for batch = 1, 5 do
  local docs = {}
  for i = 1, 1000 do docs[i] = document(batch * 1000 + i) end
  for d, counts in tokenizer(docs) do
    for w, n in pairs(counts) do
      local postings = index[w]
      if not postings then postings = {} index[w] = postings end
      postings[#postings + 1] = d.id
      total = total + n
    end
    if d.score > 50 then
      local out = {}
      serialize({ d.id, d.title, d.tags, counts }, out)
      local text = table.concat(out)
      cache:put(d.id % 500, text)
      rendered = rendered + #text
    end
  end
  -- Older postings are dropped as the index is trimmed, as a long-running program would.
  for w, postings in pairs(index) do
    if #postings > 2000 then
      local keep = {}
      for i = #postings - 999, #postings do keep[#keep + 1] = postings[i] end
      index[w] = keep
    end
  end
  collectgarbage("step", 200)
end

-- Closures and string formatting in bulk.
local fmt = {}
for i = 1, 8000 do
  local f = function(x) return string.format("%05d:%s", x + i, words[i % #words + 1]) end
  fmt[i % 1000 + 1] = f(i)
end
collectgarbage("collect")
print("tokens", total, "rendered", rendered, "cached", cache.n, "words", #words, fmt[1])
