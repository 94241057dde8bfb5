package redisstate

// ReplicasOf is replicasOf, for the external tests.
var ReplicasOf = replicasOf
