/// What a save did besides saving.
struct SaveOutcome {
  var issue: DefaultsError?
  /// The save merged another process's changes: observers must hear of them.
  var changedElsewhere = false
}
