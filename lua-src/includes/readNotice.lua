-- readNotice(stored): a notice of notice-data (JSON [parentKey, outcome, value, policy]) as
-- { parentKey, outcome, value, policy }, or nil when it is none: not JSON (decoded under pcall, so
-- bad data never raises mid-script), not an array, a parentKey that is not a non-empty string, an
-- outcome other than "completed" and "failed", a value or policy that is neither a string nor
-- JSON null (another runtime's null reads as ""; a field left out is missing, not ""), or a policy
-- none of "", fail, ignore, remove, continue. The runtimes read notices by the same rule (the Node
-- runtime's parseNotice): a notice that is none cannot be delivered, and is deleted. Their JSON
-- parsers still differ at the edges (cjson takes NaN, Infinity, hex; JSON.parse a lone \ud800
-- escape), so what a runtime read is deleted by its bytes (ackNotices-2), not by this rule.
local NOTICE_POLICIES = { [""] = true, fail = true, ignore = true, remove = true, continue = true }
local function readNotice(stored)
  local ok, notice = pcall(cjson.decode, stored)
  if not ok or type(notice) ~= "table" then return nil end
  local parentKey, outcome, value, policy = notice[1], notice[2], notice[3], notice[4]
  if value == cjson.null then value = "" end
  if policy == cjson.null then policy = "" end
  if type(parentKey) ~= "string" or parentKey == "" or (outcome ~= "completed" and outcome ~= "failed")
      or type(value) ~= "string" or type(policy) ~= "string" or not NOTICE_POLICIES[policy] then
    return nil
  end
  return { parentKey = parentKey, outcome = outcome, value = value, policy = policy }
end
