-- image_filter.lua: the kernels of image_filter.c, in plain Lua: grayscale,
-- 3x3 box blur, then Sobel gradient magnitude. The C program owns the
-- input image and the output (u8 arrays borrowed from it); intermediate
-- images are kjit arrays made here. All arithmetic is in f64 (u8 values are
-- integers, the literals adapt), so compiled and interpreted results are
-- identical.
local kjit = require "kjit"

local K = {}

-- u8 h x w x 3 (RGB) -> f64 h x w, ITU-R BT.601 luma
function K.gray_rgb(img, g)
  for i = 1, img.shape[1] do
    for j = 1, img.shape[2] do
      g[i][j] = 0.299 * img[i][j][1] + 0.587 * img[i][j][2] + 0.114 * img[i][j][3]
    end
  end
end

-- u8 h x w -> f64 h x w
function K.gray_gray(img, g)
  for i = 1, img.shape[1] do
    for j = 1, img.shape[2] do g[i][j] = img[i][j] end
  end
end

-- 3x3 box blur; pixels outside the image repeat the edge
function K.blur(src, dst)
  local h, w = src.shape[1], src.shape[2]
  for i = 1, h do
    for j = 1, w do
      local s = 0.0
      for di = -1, 1 do
        local ii = math.min(math.max(i + di, 1), h)
        for dj = -1, 1 do
          s = s + src[ii][math.min(math.max(j + dj, 1), w)]
        end
      end
      dst[i][j] = s / 9
    end
  end
end

-- Sobel gradient magnitude, clipped to 0..255, into a u8 image
function K.sobel(src, out)
  local h, w = src.shape[1], src.shape[2]
  for i = 1, h do
    local im, ip = math.max(i - 1, 1), math.min(i + 1, h)
    for j = 1, w do
      local jm, jp = math.max(j - 1, 1), math.min(j + 1, w)
      local gx = (src[im][jp] + 2 * src[i][jp] + src[ip][jp])
               - (src[im][jm] + 2 * src[i][jm] + src[ip][jm])
      local gy = (src[ip][jm] + 2 * src[ip][j] + src[ip][jp])
               - (src[im][jm] + 2 * src[im][j] + src[im][jp])
      local m = math.sqrt(gx * gx + gy * gy)
      if m > 255 then m = 255 end
      out[i][j] = math.floor(m + 0.5)
    end
  end
end

-- The same kernels compiled by kjit (on first use for each array type).
local compiled = {}
for name, f in pairs(K) do compiled[name] = kjit.jit(f) end

local M = { kernels = K }

-- filter(img, out, backend): img is u8 h x w x 3 or h x w, out u8 h x w;
-- backend "cpu" (compiled, the default) or "interpreted".
function M.filter(img, out, backend)
  local k = backend == "interpreted" and K or compiled
  local h, w = img.shape[1], img.shape[2]
  assert(out.shape[1] == h and out.shape[2] == w, "output size differs from the input's")
  local g, b = kjit.empty({h, w}, "f64"), kjit.empty({h, w}, "f64")
  if img.ndim == 3 then k.gray_rgb(img, g) else k.gray_gray(img, g) end
  k.blur(g, b)
  k.sobel(b, out)
end

return M
