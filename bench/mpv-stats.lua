-- Loaded into mpv by bench/bench.py and bench/vm-clock.sh: at shutdown, writes (as one JSON object,
-- to the file named by --script-opts=benchstats-out=PATH) mpv's frame counters and how far the
-- playback position moved against the wall clock from the first picture to the end.
local out = mp.get_opt("benchstats-out")
local first_wall, first_pos, last_wall, last_pos
local seen = {}
local names = {"frame-drop-count", "decoder-frame-drop-count", "vo-delayed-frame-count", "estimated-frame-number"}
-- Polled (not all of them notify changes); the largest value seen is kept, as some reset at the end.
local function poll()
  local pos = mp.get_property_number("time-pos")
  if pos ~= nil then
    local now = mp.get_time()
    if first_wall == nil then first_wall, first_pos = now, pos end
    last_wall, last_pos = now, pos
  end
  for _, name in ipairs(names) do
    local v = mp.get_property_number(name)
    if v ~= nil and (seen[name] == nil or v > seen[name]) then seen[name] = v end
  end
end
mp.add_periodic_timer(0.05, poll)
mp.register_event("end-file", poll)
mp.register_event("shutdown", function()
  if out == nil then return end
  local parts = {}
  for _, name in ipairs(names) do
    if seen[name] ~= nil then parts[#parts + 1] = string.format("%q:%d", name, seen[name]) end
  end
  if first_wall ~= nil then
    parts[#parts + 1] = string.format("\"wall\":%.6f,\"timeline\":%.6f", last_wall - first_wall, last_pos - first_pos)
  end
  local f = io.open(out, "w")
  if f then
    f:write("{" .. table.concat(parts, ",") .. "}\n")
    f:close()
  end
end)
