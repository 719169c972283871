package diff

// removal says what happens to a removed object on merge.
func removal(o Object) []string {
	if o.Action != Removed {
		return nil
	}
	if !o.Pruned {
		return []string{"no longer rendered; the target does not prune, so it stays in the cluster"}
	}
	return []string{"will be pruned (deleted from the cluster on merge)"}
}
