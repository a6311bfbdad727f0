-- elfpatch.lua: edits an ELF64 object inside a byte string, for the tests
-- of kjit's fallback to the LLVM JIT (test_cache, test_export). kjit's own
-- object loader refuses an object whose entry symbol is not STT_FUNC ("no
-- entry function"); the LLVM JIT does not care, so such bytes take the
-- fallback path.
local M = {}

-- bytes with the entry symbol ("kjit_c_...", STT_FUNC) of the ELF object
-- found at 0-based offset o made STT_NOTYPE, and how many were patched
function M.entry_to_notype(bytes, o)
  local function u(fmt, at) return string.unpack(fmt, bytes, o + at + 1) end
  local shoff, shentsize, shnum = u("<I8", 0x28), u("<I2", 0x3a), u("<I2", 0x3c)
  local patched = 0
  for i = 0, shnum - 1 do
    local sh = shoff + i * shentsize
    if u("<I4", sh + 4) == 2 then   -- SHT_SYMTAB
      local off, size, link = u("<I8", sh + 0x18), u("<I8", sh + 0x20), u("<I4", sh + 0x28)
      local stroff = u("<I8", shoff + link * shentsize + 0x18)
      for s = off, off + size - 24, 24 do
        local name = string.unpack("z", bytes, o + stroff + u("<I4", s) + 1)
        local info = u("B", s + 4)
        if name:match("^kjit_c_") and info & 15 == 2 then
          local at = o + s + 4
          bytes = bytes:sub(1, at) .. string.char(info & ~15) .. bytes:sub(at + 2)
          patched = patched + 1
        end
      end
    end
  end
  return bytes, patched
end

return M
