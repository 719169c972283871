// Package resourceset expands Flux Operator ResourceSets
// (fluxcd.controlplane.io/v1) into the objects they generate, offline, from
// the documented API: Expand takes the ResourceSet, the
// ResourceSetInputProvider objects it may read, and returns the objects the
// operator would apply.
//
// # Supported
//
//   - spec.inputs, and spec.inputsFrom by name or label selector among the
//     providers given, in the ResourceSet's namespace only (the API has no
//     namespace in the reference). Selected providers are taken once each,
//     ordered by name, after spec.inputs. A provider named but not given is
//     an error.
//   - Static providers: spec.defaultValues is the one input set. Other
//     types need Options.Dynamic; without it Expand returns a *SkipError.
//   - spec.inputStrategy Flatten (concatenation) and Permute (Cartesian
//     product, each source's input set under its NormalizeName key; at
//     most Options.MaxInputs permutations, 10000 by default; providers
//     without inputs skipped unless includeEmptyProviders). Flatten has no
//     cap, as in the operator.
//   - spec.resources (each object a template, as YAML with sorted keys),
//     spec.resourcesTemplate (one multi-document template) and spec.steps;
//     << >> delimiters, missingkey=error, the hermetic sprig functions the
//     operator has (it uses slim-sprig), and slugify, toYaml and
//     mustToYaml. A ResourceSet with neither spec.inputs nor
//     spec.inputsFrom executes its templates once, with inputs empty; one
//     whose sources give no input set generates nothing.
//   - De-duplication by group, kind, namespace and name: the first object
//     wins, so spec.resources before spec.resourcesTemplate and input sets
//     in order. One identity in two steps is an error.
//   - Objects with fluxcd.controlplane.io/reconcile: disabled are left out
//     (Result.Excluded); spec.commonMetadata is merged onto the others, and
//     the labels NameLabel and NamespaceLabel name the ResourceSet.
//   - A generated object without a namespace keeps none: the operator does
//     not default it.
//
// # Built-in inputs and their ids
//
// Every input set gets inputs.provider (apiVersion, kind, name, namespace
// of the ResourceSet or provider it comes from). inputs.id is:
//
//   - for a Static provider: StaticID, the decimal Adler-32 checksum of the
//     provider's metadata.uid, as the cluster computes it. Objects in a
//     repository have no uid (the API server assigns it), so a render uses
//     the checksum of the provider's name instead, as `flux-operator build
//     rset` does: ids, and names made from them, differ from the cluster's.
//   - for a dynamic provider: the id in what Options.Dynamic returns.
//   - for spec.inputs: none is added (an input's own id field is kept), as
//     `flux-operator build rset` v0.59.0 does.
//   - under Permute: the checksum of "key=index" for each source, joined
//     with "/" (index is the input set's position in its source), and each
//     source's own fields stay under its key.
//
// # Not rendered
//
// A ResourceSet with fluxcd.controlplane.io/reconcile: disabled is paused:
// the operator applies nothing new for it, so Expand returns a *SkipError
// (`flux-operator build` renders it regardless). Data the operator reads
// from the cluster when it applies an object (the copyFrom,
// convertKubeConfigFrom and checksumFrom annotations) cannot be known:
// those objects are returned as templated, and listed in
// Result.FromCluster. dependsOn, wait and timeouts concern applying, not
// what is generated, and are not read.
package resourceset
