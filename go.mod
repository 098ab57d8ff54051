module github.com/duckicelake/duckicelake

go 1.26.8
