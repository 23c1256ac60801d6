#if RxCocoa
  public import Foundation
  public import RxCocoa
  public import RxSwift
  import Synchronization

  extension DefaultsStore: ReactiveCompatible {}

  extension Reactive where Base: UserDefaults {
    /// A key of this `UserDefaults` as a `ControlProperty`: the value (`nil` while absent) and each distinct
    /// change, on the main scheduler; elements bound into it are written.
    ///
    /// Unlike the `didChangeNotification` recipe it emits on Linux, emits only for its key, never repeats `nil`,
    /// and sees writes from other processes.
    ///
    /// The instance is held weakly, as RxCocoa's properties hold their control: neither a subscription nor a
    /// binding keeps it alive, and the property completes once it is deallocated (on Apple platforms as it goes,
    /// through RxCocoa's `deallocating`; on Linux, where corelibs' objects report no deallocation, within a quarter of
    /// a second). Elements bound into it after that are dropped.
    ///
    /// ```swift
    /// let volume: ControlProperty<Double?> = UserDefaults.standard.rx.default(forKey: "volume")
    /// ```
    ///
    /// - Parameter key: The key's name.
    /// - Returns: The key as a `ControlProperty`.
    public func `default`<E: DefaultsValue & Equatable>(forKey key: String) -> ControlProperty<E?> {
      makeControlProperty(DefaultsKey<E?>(key), lettingGoOf: base)
    }

    /// A URL key of this `UserDefaults` as a `ControlProperty`, stored as Foundation's `url(forKey:)` reads it.
    /// It holds the instance weakly, as ``default(forKey:)`` does.
    ///
    /// ```swift
    /// chosenDocuments.bind(to: UserDefaults.standard.rx.url(forKey: "documentUrl")).disposed(by: bag)
    /// ```
    ///
    /// - Parameter key: The key's name.
    /// - Returns: The key as a `ControlProperty`.
    public func url(forKey key: String) -> ControlProperty<URL?> {
      makeControlProperty(DefaultsKey<URL?>(key), lettingGoOf: base)
    }

    /// A remembered document of this `UserDefaults` as a `ControlProperty`: what a document picker's choice should be
    /// bound to, so that the document opens again after the app restarts (a URL picked in open mode is
    /// security-scoped: at the next launch the URL stored by ``url(forKey:)`` no longer opens; a bookmark does).
    ///
    /// Each element is resolved as ``DefaultsStore/document(_:)`` resolves it: at the document's current URL, a stale
    /// bookmark renewed and saved; `nil` when the document cannot be found (reported to the `issueHandler` of the suite's
    /// stores where the library can tell the instance's suite: on Linux, and for `UserDefaults.standard`). Each
    /// distinct document is emitted once: a renewal is not emitted again. A key that holds a URL (as ``url(forKey:)``
    /// stored it) reads as a reference to that file.
    /// It holds the instance weakly, as ``default(forKey:)`` does.
    ///
    /// ```swift
    /// let document = UserDefaults.standard.rx.document(forKey: "documentUrl")
    /// pickedURLs.compactMap { try? DocumentReference(url: $0) }.bind(to: document).disposed(by: bag)
    /// document.subscribe(onNext: { try? $0?.withAccess(open) }).disposed(by: bag)
    /// ```
    ///
    /// - Parameter key: The key's name.
    /// - Returns: The key as a `ControlProperty`.
    public func document(forKey key: String) -> ControlProperty<DocumentReference?> {
      let typed = DefaultsKey<DocumentReference?>(key)
      // Observed by stored form, bookmark included (`StoredDocument` is not `Equatable`): a new bookmark of the same
      // file, picked again after its document was gone, is heard. What is emitted is resolved, and emitted once per
      // distinct document: a renewal saved by a resolution, or two references that both resolve to nothing, are not
      // emitted again.
      let stored = DefaultsKey<StoredDocument?>(key)
      let property = makeControlProperty(typed, lettingGoOf: base) { store, emit in
        store.property(stored).observe { [weak store] raw in
          guard let store else { return }
          emit(raw.flatMap { store.resolved($0.reference, for: typed, system: PlatformDocuments.system) })
        }
      }
      return ControlProperty(
        values: property.asObservable().distinctUntilChanged { $0?.url == $1?.url }, valueSink: property)
    }
  }

  /// A remembered document as observers of its stored form see it: not `Equatable`, so that the hub compares stored
  /// forms (the bookmark included) to decide what is a change.
  struct StoredDocument: DefaultsValue {
    let reference: DocumentReference

    init?(propertyListValue: PropertyListValue) {
      guard let reference = DocumentReference(propertyListValue: propertyListValue) else { return nil }
      self.reference = reference
    }

    func propertyListValue() throws -> PropertyListValue? {
      try reference.propertyListValue()
    }
  }

  extension Reactive where Base: DefaultsStore {
    /// A key of this store as a `ControlProperty`: subscription and delivery on the main scheduler, no errors,
    /// completion when the store is deallocated; elements bound into it are written.
    ///
    /// ```swift
    /// store.rx.property(.volume).subscribe(onNext: { print($0) }).disposed(by: bag)
    /// ```
    ///
    /// - Parameter key: The key.
    /// - Returns: The key as a `ControlProperty`.
    public func property<Value>(_ key: DefaultsKey<Value>) -> ControlProperty<Value> {
      let weakStore = WeakBox(base)
      return makeControlProperty(key, store: { weakStore.object }, owner: { weakStore.object }) {
        Observable.create { observer in
          guard let store = weakStore.object else {
            observer.onNext(())
            return Disposables.create()
          }
          let sink = SerialObserver(observer)
          let id = store.whenDeallocated { sink.observer.onNext(()) }
          return Disposables.create { weakStore.object?.forgetDeallocationAction(id) }
        }
      }
    }
  }

  /// `UserDefaults.rx`'s property: the instance held weakly. Its store is the suite's own when the suite can be told
  /// (Linux; `UserDefaults.standard` everywhere), else a store over the instance held weakly
  /// (``HubRegistry/hubLettingGo(of:suiteIsTold:)``); neither keeps the instance.
  ///
  /// - Parameter suiteIsTold: false to make the store as on Apple platforms, where the suite cannot be told (tests).
  /// - Parameter observing: How a subscription observes the store and emits (a remembered document: its stored form,
  ///   resolved); nil for the key's own observer.
  func makeControlProperty<Value>(
    _ key: DefaultsKey<Value>, lettingGoOf defaults: UserDefaults, suiteIsTold: Bool = true,
    observing: Observing<Value>? = nil
  ) -> ControlProperty<Value> {
    let store = DefaultsStore(hub: HubRegistry.hubLettingGo(of: defaults, suiteIsTold: suiteIsTold))
    let instance = WeakBox(defaults)
    // `UserDefaults.standard` lives as long as the process.
    let lives = defaults === UserDefaults.standard
    return makeControlProperty(
      key, store: { instance.object == nil ? nil : store }, owner: { instance.object }, observing: observing
    ) {
      guard !lives, let defaults = instance.object else { return lives ? .never() : .just(()) }
      #if os(Linux)
        // corelibs' objects report no deallocation: one timer, shared by every such property and running while
        // one is subscribed, looks four times a second.
        _ = defaults
        return instanceChecks.filter { _ in instance.object == nil }.map { _ in () }
      #else
        // On Apple platforms the store holds a suite's instance weakly (only `UserDefaults.standard` has a name), and
        // its key-value observers must be removed before the instance goes. RxCocoa's `deallocating` (as its own
        // `observeWeakly` uses) is sent inside `dealloc`, while the instance still exists (weak references to it read
        // nil there already: the closure keeps it unowned, and runs only then). Where RxCocoa cannot intercept
        // `dealloc` (it fails at once, with an `RxCocoaObjCRuntimeError`; or it is built without swizzling), the
        // subscription keeps the instance instead (``makeControlProperty(_:store:owner:ended:)``).
        guard let storage = store.hub.storage as? UserDefaultsStorage, storage.holdsInstanceWeakly else {
          return instanceChecks.filter { _ in instance.object == nil }.map { _ in () }
        }
        #if DISABLE_SWIZZLING
          return .error(NoDeallocationSignal())
        #else
          return defaults.rx.deallocating.take(1).do(onNext: { [unowned(unsafe) defaults] _ in
            storage.instanceIsGoingAway(defaults)
          })
        #endif
      #endif
    }
  }

  /// A key as a `ControlProperty`: subscription and delivery on the main scheduler; elements bound into it are
  /// written. `store()` is nil once the property's owner is gone (a subscription then completes at once, and bound
  /// elements are dropped); `ended()`, called as a subscription begins, gives the sequence whose first element
  /// completes it. If that sequence fails at once, the subscription keeps `owner()` alive until it is disposed: the
  /// property then never sees its owner go, which must not happen while the store observes it.
  private func makeControlProperty<Value>(
    _ key: DefaultsKey<Value>, store: @escaping @Sendable () -> DefaultsStore?,
    owner: @escaping @Sendable () -> AnyObject?, observing: Observing<Value>? = nil,
    ended: @escaping @Sendable () -> Observable<Void>
  ) -> ControlProperty<Value> {
    let values = Observable<Value>.create { observer in
      guard let current = store() else {
        observer.onCompleted()
        return Disposables.create()
      }
      let sink = SerialObserver(observer)
      // Before the store observes: a failure is known before key-value observing registers anything.
      let failed = Flag()
      let end = ended().take(1).subscribe(
        onNext: { sink.observer.onCompleted() }, onError: { _ in failed.raised.store(true, ordering: .relaxed) })
      let kept = failed.raised.load(ordering: .relaxed) ? owner() : nil
      let emit: @Sendable (Value) -> Void = { sink.observer.onNext($0) }
      let token = observing?(current, emit) ?? current.property(key).observe(emit)
      return Disposables.create {
        token.cancel()
        end.dispose()
        withExtendedLifetime(kept) {}
      }
    }
    .subscribe(on: ConcurrentMainScheduler.instance)
    .observe(on: MainScheduler.instance)
    // Writes are safe from any thread, so the sink writes where the element arrives.
    let valueSink = AnyObserver<Value> { event in
      guard case .next(let value) = event, let current = store() else { return }
      current[key] = value
    }
    return ControlProperty(values: values, valueSink: valueSink)
  }

  /// How a subscription of a `ControlProperty` observes its store: registers what calls `emit`, and returns its token.
  typealias Observing<Value> = @Sendable (DefaultsStore, @escaping @Sendable (Value) -> Void) -> DefaultsObservation

  /// An object held weakly, shared by the closures of one `ControlProperty`. (A class box: `weak let`, SE-0481,
  /// needs Swift 6.2, and the package promises 6.1.)
  private final class WeakBox<Object: AnyObject>: @unchecked Sendable {  // set once, in init (then only zeroed)
    weak var object: Object?
    init(_ object: Object) { self.object = object }
  }

  /// RxCocoa was built without swizzling: no `deallocating` to learn of an instance's end.
  private struct NoDeallocationSignal: Error {}

  /// A flag the closures of one subscription share.
  private final class Flag: Sendable {
    let raised = Atomic<Bool>(false)
  }

  /// Ticks four times a second while subscribed, one timer for every subscriber (RxSwift's `share` runs the
  /// interval once, and stops it with the last subscriber). RxSwift's operators are thread-safe; the value is
  /// only ever subscribed.
  nonisolated(unsafe) private let instanceChecks = Observable<Int>.interval(
    .milliseconds(250),
    scheduler: SerialDispatchQueueScheduler(qos: .utility, internalSerialQueueName: "ReactiveDefaults.rx")
  ).share()
#endif
