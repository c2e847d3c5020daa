package main

// The run-history dialects faucet is built with; db.Open finds them by name.
import (
	_ "github.com/faucet-dev/faucet/db/postgres"
	_ "github.com/faucet-dev/faucet/db/sqlite"
)
