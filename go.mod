module github.com/acta-remote/acta-remote

go 1.26.8

require (
	github.com/golang/snappy v1.0.0 // indirect
	github.com/gorilla/mux v1.8.1 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/prometheus/common v0.73.1 // indirect
	github.com/prometheus/prometheus v0.316.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
)
