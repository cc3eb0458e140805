/**
 * An experiment resolved once into the cells a run executes, each fully settled: its server settings, the
 * services it reaches through Toxiproxy, its servers' URLs, every attack's plan against them, and the group
 * a stopWhen skips. The runner and the cell's steps read these fields and derive nothing again.
 */
import type { AttackPlan } from "./attack_plan.ts";
import {
  attackPlan,
  type Cell,
  cellSettings,
  type Experiment,
  type ProxiedService,
  proxiedServices,
  type ServerSettings,
} from "./experiment_plan.ts";

export interface SettledCell extends Cell {
  settings: ServerSettings;
  /** The services the cell's server reaches through Toxiproxy (both when it runs apart). */
  proxied: ProxiedService[];
  /** The origins of the cell's servers: instance i at urls[i]. */
  urls: string[];
  /** Each attack's plan against the cell's servers, in the order of `attacks`. */
  plans: AttackPlan[];
  /** A stopWhen skips the rest of this group: the strategy's repeat, within the attack's stop scope. */
  stopGroup: string;
}

/** The cells with every decision made; `urlsFor(apart)` gives the origins of a cell's servers. */
export function settleCells(
  experiment: Experiment,
  cellList: Cell[],
  urlsFor: (apart: boolean) => string[],
): SettledCell[] {
  return cellList.map((cell) => {
    const settings = cellSettings(experiment, cell);
    const urls = urlsFor(settings.apart);
    const [first] = cell.attacks;
    const scope = first && experiment.stopScope ? experiment.stopScope(first) : "";
    return {
      ...cell,
      settings,
      proxied: proxiedServices(cell.attacks, settings.apart),
      urls,
      plans: cell.attacks.map((attack) => attackPlan(attack, experiment, urls)),
      stopGroup: `${cell.strategy}#${cell.repeat}#${scope}`,
    };
  });
}
