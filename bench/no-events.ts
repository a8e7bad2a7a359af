/**
 * Experiment, not a feature: preloaded into the controller process with
 * `node --import {repo}/dist/bench/no-events.js …` (through --controller-cmd),
 * it turns Event recording into a no-op, to measure what Events cost the
 * controller and the remote apiserver. ES modules are instantiated once per
 * URL, so the controller uses this very (patched) class.
 */
import { EventRecorder } from '../src/kube/events.js';

EventRecorder.prototype.record = async function record(): Promise<void> {};
