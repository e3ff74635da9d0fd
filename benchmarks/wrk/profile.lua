-- wrk script: replays one traffic/*.http profile (format: traffic/README.md) over keep-alive connections.
--
--   wrk -t4 -c4 -d10s --latency -s benchmarks/wrk/profile.lua http://127.0.0.1:5000 -- traffic/chrome.http [depth] [pace]
--
-- Arguments after "--" (or the environment when absent):
--   1: the .http file            (WRK_PROFILE)
--   2: pipelining depth, >= 1    (WRK_PIPELINE, default 1): every wrk "request" is `depth` HTTP requests
--      written back to back, as TechEmpower's pipeline.lua does.
--   3: pace, milliseconds >= 0   (WRK_PACE, default 0): a connection waits this long after a response before it
--      sends its next request. 0 sends at once (a closed loop that keeps the 2 cores busy); with a pace the load is
--      fixed by the connections and the pace, and the server waits between requests, as a server mostly does.
--
-- What gets sent: request i of a connection is head (i mod count) of the file, LF turned into CRLF,
-- placeholders filled like tests/Shared/TrafficProfile.cs does:
--   ${uuid} ${hex16} ${hex32}  fresh random value for every occurrence;
--   ${n}                       the connection's request counter i (0-based);
--   ${ip}                      one of 16 addresses, picked once per request (all ${ip} of it agree);
--   ${cookie}                  one of 8 cookies of 60-180 bytes, picked once per request.
-- The two pools come from a fixed seed, so every thread and every run uses the same 16 + 8 values.
--
-- Connections vs threads: wrk gives Lua one state per *thread*, and request() does not say which of the
-- thread's connections it is for. The rotation and ${n} are therefore per thread; they are per
-- connection only when every thread has exactly one connection. Run it with -t N -c N (compare.sh does).
--
-- Counting: wrk counts every HTTP response it parses (summary.requests, "Requests/sec"), so with
-- pipelining its request count and rate are already per HTTP request. Its latency is recorded once per
-- batch: from writing the batch to the last response of the batch.
--
-- done() prints one machine-readable line (latency percentiles: see visible_percentiles below):
--   WRK_RESULT requests=<responses> duration_us=<> rps=<> depth=<> p50_us=<> p90_us=<> p99_us=<> max_us=<>
--              visible_pct=<> generated=<HTTP requests built> connect_err=<> read_err=<> write_err=<>
--              status_err=<> timeout_err=<>

local PLACEHOLDERS = { uuid = true, hex16 = true, hex32 = true, n = true, ip = true, cookie = true }
local POOL_SEED = 20240501
local ADDRESS_COUNT = 16
local COOKIE_COUNT = 8
local COOKIE_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

local random, format, concat, sub = math.random, string.format, table.concat, string.sub

-- Splits the file into request heads, each a list of parts: literal strings (CRLF line ends, the
-- head's terminating empty line included) and placeholder names as { name }.
local function load_profile(path)
  local f = assert(io.open(path, "rb"), "cannot open profile " .. tostring(path))
  local text = f:read("*a")
  f:close()
  text = text:gsub("\r\n", "\n")

  local heads, lines = {}, {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    if line ~= "" then
      lines[#lines + 1] = line
    elseif #lines > 0 then
      heads[#heads + 1] = concat(lines, "\r\n") .. "\r\n\r\n"
      lines = {}
    end
  end
  assert(#lines == 0, path .. ": the last request head does not end with an empty line")
  assert(#heads > 0, path .. ": no request head")

  local templates = {}
  for h, head in ipairs(heads) do
    local parts, pos = {}, 1
    while true do
      local s, e, name = head:find("%${(%w+)}", pos)
      if not s then break end
      assert(PLACEHOLDERS[name], path .. ": unknown placeholder ${" .. name .. "} in request " .. h)
      if s > pos then parts[#parts + 1] = sub(head, pos, s - 1) end
      parts[#parts + 1] = { name }
      pos = e + 1
    end
    if pos <= #head then parts[#parts + 1] = sub(head, pos) end
    templates[h] = parts
  end
  return templates
end

local function make_pools()
  math.randomseed(POOL_SEED)
  local addresses, seen = {}, {}
  while #addresses < ADDRESS_COUNT do
    local a = format("%d.%d.%d.%d", random(1, 223), random(0, 255), random(0, 255), random(1, 254))
    if not seen[a] then seen[a] = true; addresses[#addresses + 1] = a end
  end
  local cookies = {}
  for c = 1, COOKIE_COUNT do
    local length = random(60, 180)
    local chars = { "session=" }
    for _ = #"session=" + 1, length do
      local k = random(1, #COOKIE_ALPHABET)
      chars[#chars + 1] = sub(COOKIE_ALPHABET, k, k)
    end
    cookies[c] = concat(chars)
  end
  return addresses, cookies
end

local function hex(digits)
  local t = {}
  for k = 1, digits / 4 do t[k] = format("%04x", random(0, 0xffff)) end
  return concat(t)
end

local function uuid()
  return format("%04x%04x-%04x-4%03x-%04x-%04x%04x%04x",
    random(0, 0xffff), random(0, 0xffff), random(0, 0xffff), random(0, 0xfff),
    random(0, 0x3fff) + 0x8000, random(0, 0xffff), random(0, 0xffff), random(0, 0xffff))
end

-- Main state: give every thread an id (before its init runs) and keep the threads for done().
local threads = {}
function setup(thread)
  threads[#threads + 1] = thread
  thread:set("thread_id", #threads)
end

-- Thread state.
local templates, addresses, cookies, skip_first
local i = 0            -- this thread's (= connection's) request counter
depth = 1              -- globals, so that done() can read them with thread:get()
generated = 0          -- HTTP requests built and handed to wrk (the batches wrk sent or is sending)

function init(args)
  local path = args[1] or os.getenv("WRK_PROFILE")
  assert(path and path ~= "", "usage: wrk ... -s profile.lua <url> -- <file.http> [depth] (or WRK_PROFILE)")
  depth = tonumber(args[2] or os.getenv("WRK_PIPELINE") or "1")
  assert(depth and depth >= 1 and depth == math.floor(depth), "pipelining depth must be an integer >= 1")
  local pace = tonumber(args[3] or os.getenv("WRK_PACE") or "0")
  assert(pace and pace >= 0 and pace == math.floor(pace), "pace must be a whole number of milliseconds >= 0")
  if pace > 0 then
    -- wrk looks for delay() once the first thread's init has run; without it every request is sent at once.
    function delay() return pace end
  end
  templates = load_profile(path)
  addresses, cookies = make_pools()
  local id = thread_id or 1
  math.randomseed(1000003 * id + 17)   -- fresh values: fixed per thread, different between threads
  -- wrk calls request() once on thread 1 before the run to check the request and count the pipelined
  -- responses; that request is never sent, so it must not advance the rotation or the counter.
  skip_first = (id == 1)
end

local function render(k)
  local parts = templates[(k % #templates) + 1]
  local ip = addresses[random(1, ADDRESS_COUNT)]
  local cookie = cookies[random(1, COOKIE_COUNT)]
  local out = {}
  for p = 1, #parts do
    local part = parts[p]
    if type(part) == "string" then
      out[p] = part
    else
      local name = part[1]
      if name == "hex16" then out[p] = hex(16)
      elseif name == "hex32" then out[p] = hex(32)
      elseif name == "uuid" then out[p] = uuid()
      elseif name == "n" then out[p] = tostring(k)
      elseif name == "ip" then out[p] = ip
      else out[p] = cookie end
    end
  end
  return concat(out)
end

function request()
  local batch = {}
  for d = 1, depth do batch[d] = render(i + d - 1) end
  if skip_first then
    skip_first = false
  else
    i = i + depth
    generated = generated + depth
  end
  return concat(batch)
end

-- wrk 4.1 corrects latencies for coordinated omission before done(): for every sample of at least twice
-- the mean per-request interval it adds synthetic samples. With pipelining that interval is per response,
-- below the batch latency, so some synthetic samples land under the histogram's minimum, where
-- latency:percentile() never looks but still counts them (wrk then prints "99% 0.00us"). The percentiles
-- below are taken over the samples percentile() can see: q_max is the highest percentile it can still
-- answer, and p% of the visible samples is percentile(p * q_max / 100). Without such samples q_max = 100
-- and the figures are exactly wrk's.
local function visible_percentiles(latency, ps)
  local q_max = 100
  if latency:percentile(100) == 0 then
    local lo, hi = 0, 100
    for _ = 1, 50 do
      local mid = (lo + hi) / 2
      if latency:percentile(mid) ~= 0 then lo = mid else hi = mid end
    end
    q_max = lo
  end
  local out = {}
  for k, p in ipairs(ps) do out[k] = latency:percentile(p * q_max / 100) end
  return out, q_max
end

function done(summary, latency, requests)
  local built, d = 0, 1
  for _, t in ipairs(threads) do
    built = built + (t:get("generated") or 0)
    d = t:get("depth") or d
  end
  local pct, q_max = visible_percentiles(latency, { 50, 90, 99 })
  local e = summary.errors
  io.write(format("WRK_RESULT requests=%d duration_us=%d rps=%.2f depth=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d " ..
      "visible_pct=%.2f generated=%d connect_err=%d read_err=%d write_err=%d status_err=%d timeout_err=%d\n",
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6), d,
    pct[1], pct[2], pct[3], latency.max, q_max,
    built, e.connect, e.read, e.write, e.status, e.timeout))
end
