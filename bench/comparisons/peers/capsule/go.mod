module tenantgate.io/bench/comparisons/peers/capsule

go 1.26.4

require github.com/projectcapsule/capsule v0.14.0
