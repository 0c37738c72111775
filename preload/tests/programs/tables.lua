-- A deterministic Lua 5.4 workload for the preload tests (tables, strings, patterns,
-- closures, coroutines, the garbage collector); its output must match a run on glibc exactly.
local t = {}
for i = 1, 200000 do t[i] = i * i % 1009 end
for i = 1, 200000, 3 do t[i] = nil end
local n, s = 0, 0
for _, v in pairs(t) do n = n + 1; s = s + v end
print("array", n, s)

local h = {}
for i = 1, 50000 do h["key" .. i] = { i, tostring(i), i * 0.5 } end
for i = 1, 50000, 2 do h["key" .. i] = nil end
local keys = {}
for k in pairs(h) do keys[#keys + 1] = k end
table.sort(keys)
print("hash", #keys, keys[1], keys[#keys])

local words = {}
for w in string.gmatch(string.rep("the quick brown fox jumps over the lazy dog ", 5000), "%a+") do
  words[w] = (words[w] or 0) + 1
end
local wl = {}
for w, c in pairs(words) do wl[#wl + 1] = w .. "=" .. c end
table.sort(wl)
print("words", table.concat(wl, ","))

local big = string.rep("abc", 300000)
local replaced, count = string.gsub(big, "bca", "X")
print("gsub", #replaced, count)
print("format", string.format("%08.3f|%-6s|%x|%q", math.pi, "ab", 255, "a\nb"))

local adders = {}
for i = 1, 10000 do adders[i] = function(x) return x + i end end
local acc = 0
for i = 1, 10000 do acc = acc + adders[i](1) end
print("closures", acc)

local gen = coroutine.wrap(function()
  for i = 1, 100000 do coroutine.yield(i) end
end)
local cs = 0
for _ = 1, 100000 do cs = cs + gen() end
print("coroutine", cs)

local objs = {}
for i = 1, 100000 do objs[i] = { next = objs[i - 1], payload = string.rep("x", i % 100) } end
objs = nil
collectgarbage("collect")
print("gc", collectgarbage("count") > 0)

local f = load("local a, b = ... return a * b + #tostring(a)")
print("load", f(12345, 678))
print("utf8", utf8.len("aé€𝄞"), utf8.char(0x20AC))
print("math", math.tointeger(2^53), 7 // 2, 7 % -3, math.maxinteger)
print("done")
