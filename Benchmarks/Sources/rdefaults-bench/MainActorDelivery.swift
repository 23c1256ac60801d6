import Dispatch
import Foundation
import ReactiveDefaults
import Synchronization

/// A burst of writes on a background thread, observed on the main actor ÷ the same burst observed on the writing
/// thread: from the first write until the handler has the last value, per write. The main thread runs its run loop
/// meanwhile, which serves the main queue, where main-actor deliveries are enqueued; while it is busy, deliveries
/// coalesce to the newest value, so the cost is the writes plus the hops the main thread takes.
enum MainActorDelivery {
  /// Set once the handler saw the burst's last value.
  private final class Arrival: Sendable {
    let target: Int
    private let arrived = Atomic<Bool>(false)

    init(target: Int) { self.target = target }

    func saw(_ value: Int) { if value == target { arrived.store(true, ordering: .releasing) } }
    var hasArrived: Bool { arrived.load(ordering: .acquiring) }
  }

  static func measure(_ settings: Settings) -> Comparison {
    let suite = scratchSuite("main-actor")
    defer { cleanUp(suite) }
    let store = DefaultsStore(suiteName: suite)!
    let key = DefaultsKey<Int>("n", default: 0)
    let writes = settings.quick ? 10_000 : 50_000
    let clock = ContinuousClock()
    var next = 0
    func burst(onMainActor: Bool) -> Double {
      let first = next
      next += writes
      let arrival = Arrival(target: next)
      let token =
        onMainActor
        ? store.property(key).observe(on: .mainActor, initial: false) { arrival.saw($0) }
        : store.property(key).observe(initial: false) { arrival.saw($0) }
      defer { token.cancel() }
      let elapsed = clock.measure {
        Thread {
          for index in 1...writes { store[key] = first + index }
        }.start()
        while !arrival.hasArrived { _ = RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: 0.001)) }
      }
      return nanoseconds(elapsed) / Double(writes)
    }
    _ = burst(onMainActor: false)
    _ = burst(onMainActor: true)
    var baseline: [Double] = []
    var ours: [Double] = []
    for round in 0..<settings.rounds {
      if round.isMultiple(of: 2) {
        baseline.append(burst(onMainActor: false))
        ours.append(burst(onMainActor: true))
      } else {
        ours.append(burst(onMainActor: true))
        baseline.append(burst(onMainActor: false))
      }
    }
    let base = median(baseline)
    let mine = median(ours)
    return Comparison(baselineNanoseconds: base, oursNanoseconds: mine, ratio: mine / base)
  }
}
