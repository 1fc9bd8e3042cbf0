-- wrk script: rotates over "path<TAB>token" lines (one per session) read from the file given
-- after `--`; with a third argument "xff", every request carries its own X-Forwarded-For (for
-- rate-limited routes). Prints one line "WRKJSON {...}" with the figures the bench reads.
local counter = 1
local threads = {}

function setup(thread)
  thread:set("tid", counter)
  table.insert(threads, thread)
  counter = counter + 1
end

local requests = {}
local index = 0
local xff = false
local seq = 0

function init(args)
  local file = io.open(args[1], "r")
  for line in file:lines() do
    local path, token = line:match("^(%S+)\t(%S+)$")
    if path then
      table.insert(requests, { path = path, token = token })
    end
  end
  file:close()
  xff = args[2] == "xff"
  index = (tid or 1) * 7919 % #requests
end

function request()
  index = index % #requests + 1
  local entry = requests[index]
  local headers = { Authorization = "Bearer " .. entry.token }
  if xff then
    seq = seq + 1
    headers["X-Forwarded-For"] = string.format("10.%d.%d.%d", tid % 256, math.floor(seq / 256) % 256, seq % 256)
  end
  return wrk.format("GET", entry.path, headers)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"mean_us":%.1f}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean))
end
