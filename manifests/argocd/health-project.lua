-- Argo CD health check for tenantgate.io/Project.
-- Installed as resource.customizations.health.tenantgate.io_Project in argocd-cm
-- (argocd-cm-patch.yaml holds the same text; a unit test checks that they are identical).
-- Argo CD runs it with gopher-lua (Lua 5.1): keep to what Lua 5.1 and 5.4 both accept.
local hs = {}

local function condition(conditions, conditionType)
  if conditions == nil then
    return nil
  end
  for _, c in ipairs(conditions) do
    if c.type == conditionType then
      return c
    end
  end
  return nil
end

local function messageOf(c, fallback)
  if c ~= nil and c.message ~= nil and c.message ~= "" then
    return c.message
  end
  return fallback
end

local status = obj.status
local generation = 0
if obj.metadata ~= nil and obj.metadata.generation ~= nil then
  generation = obj.metadata.generation
end

-- The controller has not looked at this generation of the spec yet.
if status == nil or status.observedGeneration == nil or status.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for controller"
  return hs
end

local conditions = status.conditions

-- Cascading deletion in progress: the controller lists the namespaces still being deleted.
-- Argo CD >= 3.6 shows "Pending deletion; blocked by finalizers: ..." for a resource with a
-- deletionTimestamp unless the check sets deletionMessage, which then replaces the message.
-- Suspended while nothing is deleted until someone acts (docs/deletion.md): the deletion breaker holds
-- every cascade, or namespaces holding data wait for a platform admin's confirmation.
if status.phase == "Terminating" then
  local paused = condition(conditions, "DeletionPaused")
  local confirmation = condition(conditions, "DeletionConfirmed")
  if paused ~= nil and paused.status == "True" then
    hs.status = "Suspended"
    hs.message = messageOf(paused, "The deletion breaker holds every cascade")
  elseif confirmation ~= nil and confirmation.status == "False" then
    hs.status = "Suspended"
    hs.message = messageOf(confirmation, "Waiting for a platform admin to confirm the deletion")
  else
    hs.status = "Progressing"
    hs.message = messageOf(condition(conditions, "NamespacesRemaining"), "Deleting the project's namespaces")
  end
  hs.deletionMessage = hs.message
  return hs
end

local quota = condition(conditions, "QuotaWithinBudget")
if quota ~= nil and quota.status == "False" then
  hs.status = "Degraded"
  hs.message = messageOf(quota, "The namespace quotas exceed the project budget")
  return hs
end

local namespaces = condition(conditions, "NamespacesHealthy")
-- Argo CD applies the Project (sync-wave -2) before the namespaces' quotas (wave 0) and fails the sync
-- when a resource of a finished wave is Degraded: a declared quota not applied yet must not be Degraded
-- (nor Progressing, which would wait forever). Argo CD shows a drifted quota as OutOfSync itself.
if namespaces ~= nil and namespaces.status == "False" and namespaces.reason == "QuotaMismatch" then
  hs.status = "Healthy"
  hs.message = "Namespace quotas not applied yet: " .. messageOf(namespaces, "effective quotas differ from the declaration")
  return hs
end
if namespaces ~= nil and namespaces.status == "False" then
  hs.status = "Degraded"
  hs.message = messageOf(namespaces, "Some namespaces of the project are not healthy")
  return hs
end

local ready = condition(conditions, "Ready")
if ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = messageOf(ready, "Project is ready")
  return hs
end

hs.status = "Progressing"
hs.message = messageOf(ready, "Waiting for the project to become ready")
return hs
