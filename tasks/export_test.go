package tasks

// Cached is the task this replica's snapshot cache holds for id, as a
// command would start from it, and its snapshot.
func (s *Service) Cached(id string) (Task, []byte, bool) { return s.cache.get(id) }
