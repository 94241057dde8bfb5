package schema

// MigrationsIn exposes migrations for tests of the naming rules.
var MigrationsIn = migrations
