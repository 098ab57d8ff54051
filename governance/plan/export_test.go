package plan

import "github.com/duckicelake/duckicelake/governance/sqltext"

func lexView(s string) ([]sqltext.Token, error) { return sqltext.Lex(s) }
