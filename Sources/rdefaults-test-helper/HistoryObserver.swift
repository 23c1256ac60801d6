import Dispatch
import ReactiveDefaults

/// An observer a worker registered, and the last value it was told.
final class HistoryObserver: Sendable {
  let id: Int
  let suite: String
  let key: String
  let isQuiet: Bool
  let last = Guarded<Int?>(nil)
  let changed = DispatchSemaphore(value: 0)
  let token = Guarded<DefaultsObservation?>(nil)

  init(id: Int, suite: String, key: String, isQuiet: Bool) {
    self.id = id
    self.suite = suite
    self.key = key
    self.isQuiet = isQuiet
  }
}
