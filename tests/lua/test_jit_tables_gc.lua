-- Garbage collection while compiled code holds Lua values (issue 29): a
-- table built in a loop in compiled code, with the collector run at (about)
-- every allocation, must not lose anything compiled code still holds (its
-- values live in stack slots: runtime/luavalue.c). Run by ctest in the
-- ordinary build and in the ASan build (tests/run_all.sh).
local kjit = require "kjit"
local T = require "tablediff"

-- builds n nodes, each linked to the one before and holding a fresh table
-- and a string; intermediate tables live only in compiled code's slots
local function build(n, tag)
  local head = nil
  local list = {}
  for i = 1, n do
    local node = { i = i, prev = head, data = { i * 2, { i * 3 } }, tag = tag.name }
    node.sq = node.data[2][1] * i
    head = node
    list[#list + 1] = node
  end
  return head, list
end

local function verify(head, list, n)
  local k = n
  local node = head
  while node do
    eq(node.i, k, "node.i")
    eq(node.data[1], 2 * k, "node.data[1]")
    eq(node.data[2][1], 3 * k, "node.data[2][1]")
    eq(node.sq, 3 * k * k, "node.sq")
    eq(node.tag, "t", "node.tag")
    truthy(list[k] == node, "list[k] is the node")
    node = node.prev
    k = k - 1
  end
  eq(k, 0, "nodes reached")
end

local with_gc = require("gc_harness").with_gc

for _, mode in ipairs({ "incremental", "generational" }) do
  test("tables built in compiled code survive collections (" .. mode .. ")", function()
    local jb = kjit.jit(build)
    with_gc(mode, function()
      for round = 1, 3 do
        local head, list = jb(300, { name = "t" })
        -- a finalizer that steps the collector runs during the next call
        setmetatable({}, { __gc = function() collectgarbage("step") end })
        verify(head, list, 300)
      end
    end)
  end)
end

test("the same, differential, with a collection forced by a metamethod at every read", function()
  local mt = { __index = function(t, k) collectgarbage("collect"); return rawget(t, "_" .. k) end }
  with_gc("incremental", function()
    T.check(function(src, n)
      local out = {}
      for i = 1, n do
        local v = src.val        -- runs __index: a full collection
        out[i] = { v = v, w = { v } }
      end
      return out
    end, function() return setmetatable({ _val = 7 }, mt), 20 end)
  end)
end)

-- a chain anchored only by compiled code's local (a phi's stack slot)
-- while garbage is made in between
local function chain(n)
  local head = nil
  for i = 1, n do
    head = { i = i, prev = head }
    local junk = { i, { i } }
    junk[1] = junk[2]
  end
  return head
end

test("a chain held only by a compiled local survives collections", function()
  local jc = kjit.jit(chain)
  with_gc("incremental", function()
    local head = jc(2000)
    local k = 2000
    while head do eq(head.i, k, "head.i"); head = head.prev; k = k - 1 end
    eq(k, 0, "links")
  end)
end)
