// Package inputprovider resolves the Flux Operator
// ResourceSetInputProviders that call an API (pull requests, branches and
// tags of GitHub and Gitea, tags of an OCI repository) the way the
// operator does in the cluster, read-only, with the credentials the
// caller binds to one exact origin: Resolve(ctx, provider, opts).
//
// The exported inputs and their ids are those the ResourceSetInputProvider
// API documents (fluxcd.controlplane.io/v1): a change request exports id
// (its number), sha, branch, author and title; a branch id (the Adler-32
// of its name), branch and sha; a Git tag id (the Adler-32 of its name),
// tag and sha; an OCI artifact tag id (the Adler-32 of the tag), tag and
// digest. spec.defaultValues are the defaults of each input set. A
// provider's spec.secretRef and spec.certSecretRef live in the cluster
// and are not read: the forge the job runs on is called with the job's
// token, any other allowed host anonymously.
package inputprovider
