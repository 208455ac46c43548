module github.com/acta-remote/acta-remote/e2e

go 1.26.8
