module internal-services/hack/node/pause

go 1.25.0
