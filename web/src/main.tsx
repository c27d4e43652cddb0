// Entry point: mounts the logit microscope (app.tsx) into #app with its stylesheet.
import { render } from 'preact';
import { App } from './app';
import './style.css';

render(<App />, document.getElementById('app')!);
