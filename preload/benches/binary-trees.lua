-- Binary trees (the benchmarks game's shape): build complete trees of depth 4, 6, ..., N and
-- walk them, many times each. Every node is a table: an allocation-heavy workload whose trees
-- outgrow any thread cache. Usage: lua5.4 binary-trees.lua N (default 12).
local function make(depth)
  if depth > 0 then
    depth = depth - 1
    return { make(depth), make(depth) }
  end
  return {}
end

local function check(tree)
  if tree[1] then
    return 1 + check(tree[1]) + check(tree[2])
  end
  return 1
end

local n = tonumber(arg and arg[1]) or 12
local sum = 0
for depth = 4, n, 2 do
  for _ = 1, 2 ^ (n - depth + 4) do
    sum = sum + check(make(depth))
  end
end
print(sum)
