package rest

import (
	"github.com/duckicelake/duckicelake/catalog/materialize"
	"github.com/duckicelake/duckicelake/catalog/service"
)

// Materialized serves LoadTable from m (service.Materialized).
func Materialized(m *materialize.Materializer) Materializer { return service.Materialized(m) }
