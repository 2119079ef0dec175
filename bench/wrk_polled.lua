-- wrk script of bench_service_load.py: GET the paths in WRK_PATHS (space-separated) in turn, with the
-- bearer token in WRK_TOKEN, and print one line of figures at the end for the bench to read.
local paths = {}
for path in string.gmatch(os.getenv("WRK_PATHS") or "/api/jobs", "%S+") do
  table.insert(paths, path)
end
wrk.headers["Authorization"] = "Bearer " .. (os.getenv("WRK_TOKEN") or "")

local turn = 0
request = function()
  turn = turn + 1
  return wrk.format("GET", paths[(turn % #paths) + 1])
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d seconds=%.3f socket_errors=%d non_2xx=%d p50_us=%d p95_us=%d p99_us=%d max_us=%d\n",
    summary.requests, summary.duration / 1e6, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(95), latency:percentile(99), latency.max))
end
