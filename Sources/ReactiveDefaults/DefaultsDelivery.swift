/// Where an observer's handler runs, for the `observe(on:…)` forms of ``DefaultsProperty`` and ``DefaultsStore``.
///
/// The plain `observe` runs its handler, for a write through the library in this process, on the thread that wrote,
/// inside the write (for other sources of change, see "Which thread an observer runs on" in the Gotchas article): the
/// cheapest delivery, and the right one for code that does not care where it runs. UI code needs the main actor, and
/// Swift 6 makes hopping there by hand awkward (a `@Sendable` handler cannot touch main-actor state, and
/// `MainActor.assumeIsolated` traps off the main thread). `observe(on: .mainActor)` takes a `@MainActor` handler
/// instead, so the closure reads and writes main-actor state directly:
///
/// ```swift
/// @MainActor final class VolumeLabel {
///   let label = Label()
///   var token: DefaultsObservation?
///
///   func start(_ store: DefaultsStore) {
///     token = store.property(.volume).observe(on: .mainActor) { [label] volume in
///       label.text = "\(Int(volume * 100)) %"
///     }
///   }
/// }
/// ```
///
/// What the handler sees:
/// - A write on the main actor is delivered synchronously, before the setter returns (the UI sees its own write).
///   The initial value is delivered before `observe` returns when it is called on the main actor.
/// - A write on another thread is enqueued to the main actor. While the main actor is busy, later writes replace
///   what is waiting: the handler gets the newest value per key, never an older one after a newer one, never the same
///   value twice in a row.
/// - Nothing is delivered after ``DefaultsObservation/cancel()``, even what was already enqueued, when `cancel()` is
///   called on the main actor (from another thread, one delivery already under way may still finish).
///
/// A type rather than an overload on the handler's isolation: a closure literal matches a `@Sendable` and a
/// `@MainActor` parameter alike, so the call site would be ambiguous; `on: .mainActor` says where the handler runs
/// where it is read.
public struct DefaultsDelivery: Sendable, Equatable {
  private enum Kind: Sendable, Equatable {
    case mainActor
  }

  private let kind: Kind

  /// On the main actor: synchronously for a write made there, else enqueued, coalesced to the newest value.
  public static let mainActor = DefaultsDelivery(kind: .mainActor)
}
