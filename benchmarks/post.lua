-- wrk script: POST the request body stored in the file named by $WRK_BODY (JSON).
-- Used by benchmarks/provider_rps.py; every request sends the same bytes.
local path = os.getenv("WRK_BODY")
local file = assert(io.open(path, "rb"), "WRK_BODY must name a readable file")
wrk.method = "POST"
wrk.body = file:read("*a")
file:close()
wrk.headers["Content-Type"] = "application/json"

-- One machine-readable line, so a run with failed requests cannot pass as fast
-- (wrk counts statuses >= 400 in errors.status).
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("MISFIT requests=%d duration_us=%d errors=%d\n", summary.requests,
    summary.duration, e.status + e.connect + e.read + e.write + e.timeout))
end
