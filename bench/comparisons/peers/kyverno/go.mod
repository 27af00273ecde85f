module tenantgate.io/bench/comparisons/peers/kyverno

go 1.26.6

require github.com/kyverno/kyverno v1.19.1

// Kyverno's own go.mod carries this replace; a replace only applies in the main module, so the
// wrapper repeats it (without it the build picks upstream pod-security-admission and fails).
replace k8s.io/pod-security-admission => github.com/kyverno/pod-security-admission v0.0.0-20251031094455-46f20778634f
