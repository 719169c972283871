// Package resourceset expands Flux Operator ResourceSets
// (fluxcd.controlplane.io/v1) into the objects the operator would apply,
// offline and from the documented API: Expand takes the ResourceSet and
// the ResourceSetInputProviders it may read.
//
// Supported: spec.inputs; spec.inputsFrom by name or selector, in the
// ResourceSet's namespace (providers taken once each, by name order,
// after spec.inputs); Static providers (spec.defaultValues), other types
// through Options.Dynamic; Flatten and Permute (capped by
// Options.MaxInputs, includeEmptyProviders); spec.resources,
// spec.resourcesTemplate and spec.steps with << >>, missingkey=error, the
// hermetic sprig functions the operator also has, slugify, toYaml and
// mustToYaml; de-duplication by group, kind, namespace and name (the first
// wins: spec.resources, then the template, input sets in order);
// commonMetadata and the operator's NameLabel and NamespaceLabel. Objects
// disabled by fluxcd.controlplane.io/reconcile go to Result.Excluded; a
// missing namespace is left missing, as the operator leaves it. Without
// spec.inputs and spec.inputsFrom the templates run once with no inputs;
// sources giving no input set generate nothing.
//
// inputs.provider names the ResourceSet or provider of each input set.
// inputs.id is, for a Static provider, StaticID: the Adler-32 of its uid
// as in the cluster, but a repository's objects have no uid, so the
// render uses the name (as `flux-operator build rset` does) and ids, with
// names built from them, differ from the cluster's. Dynamic providers
// give their own ids; spec.inputs get none (their own id field is kept),
// as the CLI; a Permute set's id is the Adler-32 of its sources'
// "key=index" joined by "/".
//
// Skipped, as a *SkipError: a paused ResourceSet (reconcile: disabled),
// and one reading a non-Static provider without Options.Dynamic. What the
// operator reads from the cluster at apply time (copyFrom,
// convertKubeConfigFrom, checksumFrom) is left as templated and listed in
// Result.FromCluster. TestDeparturesFromOracle shows where ferry departs
// from the CLI v0.59.0 and why; renders are bounded (MaxRenderedBytes, and
// the list and text sizes until, seq, repeat and indent may make).
package resourceset
