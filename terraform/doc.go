// Package terraform holds wapipe's Terraform configuration (the *.tf files beside this one) and the
// tests that hold it to the code: the queues come from tasks/queues.yaml, every Firestore
// collection group has its TTL policy, each Cloud Run service gets every variable its Config
// requires (secrets only from Secret Manager), the worker stays private, and every reference
// resolves. The tests parse the files with HCL; they need neither providers nor credentials, so
// they run wherever `go test ./...` does, without `terraform init`.
package terraform
