-- wrk script: every request is a valid change set (a `change` of the root Canvas's name, a new
-- name each time), POSTed to one or more scopes.
--
--   wrk -s post.lua -t2 -c32 -d10s --latency http://127.0.0.1:PORT -- SCOPES_FILE THREADS [QUOTA]
--
-- QUOTA (filling a store): each thread POSTs exactly QUOTA change sets, then one GET /healthz per
-- connection and second.
-- wrk cannot end before -d, so the caller watches the scopes' versions and stops wrk (SIGINT) once
-- every change set is committed.
--
-- SCOPES_FILE has one "NAME ROOT_UUID" line per scope. With one line every request goes to that
-- scope; with several, each wrk thread takes its own share of the scopes and rotates through it, one
-- scope per request (wrk's Lua sees threads, not connections, so "one scope per writer" becomes
-- "the next scope for the next request": with as many scopes as connections, ~1 writer per scope).

local scopes = {}
local thread_count_seen = 0
local counter = 0
local quota = nil

local function read_scopes(path)
    local list = {}
    for line in io.lines(path) do
        local name, uuid = line:match("^(%S+)%s+(%S+)$")
        if name then list[#list + 1] = { name = name, uuid = uuid } end
    end
    assert(#list > 0, "no scopes in " .. path)
    return list
end

function setup(thread)
    thread:set("thread_index", thread_count_seen)
    thread_count_seen = thread_count_seen + 1
end

function init(args)
    local all = read_scopes(assert(args[1], "usage: wrk -s post.lua URL -- SCOPES_FILE"))
    -- this thread's share: scopes i with (i - 1) % THREADS == thread_index (THREADS = wrk's -t,
    -- passed as the second argument because init() runs before later threads exist)
    local thread_count = tonumber(args[2] or "1")
    for i, scope in ipairs(all) do
        if #all == 1 or (i - 1) % thread_count == thread_index then scopes[#scopes + 1] = scope end
    end
    assert(#scopes > 0, "fewer scopes than threads")
    quota = tonumber(args[3] or "")
    -- wrk calls request() once on thread 0 to check the script; that request is never sent.
    if quota and thread_index == 0 then quota = quota + 1 end
    if quota then -- defined only here: wrk calls delay() before every request once it exists
        delay = function()
            if counter >= quota then return 1000 end
            return 0
        end
    end
    wrk.method = "POST"
    wrk.headers["Content-Type"] = "application/json"
end

function request()
    if quota and counter >= quota then return wrk.format("GET", "/healthz") end
    counter = counter + 1
    local scope = scopes[(counter - 1) % #scopes + 1]
    local body = '{"fragments":[{"type":"change","uuid":"' .. scope.uuid ..
        '","clsName":"Canvas","properties":{"name":"w' .. thread_index .. '-' .. counter .. '"}}]}'
    return wrk.format("POST", "/v1/scopes/" .. scope.name .. "/changesets", nil, body)
end

-- No response() hook: wrk then skips parsing bodies; its "Non-2xx or 3xx responses" line counts
-- the failures.
