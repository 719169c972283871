// Package images keeps image references in a repository up to date: it
// lists the tags of registry repositories, picks the latest one per image
// policy (Flux's semver, numerical and alphabetical policies), and rewrites
// the YAML lines that carry an image setter marker.
package images
