module tenantgate.io/bench/comparisons/peers/gatekeeper

go 1.26.0

require github.com/open-policy-agent/gatekeeper/v3 v3.23.1
